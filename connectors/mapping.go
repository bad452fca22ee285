package connectors

import "fmt"

// MappingString reads key of a port mapping's wan_service_mapping_info
// (that of service endpoint endpointID): a non-empty string, or "" when
// it is absent (or null) and not required. The error names the endpoint
// and the key, for the 400 of a mapping refused when it is written.
func MappingString(endpointID string, info map[string]any, key string, required bool) (string, error) {
	v, present := info[key]
	s, isString := v.(string)
	switch {
	case (!present || v == nil) && !required:
		return "", nil
	case !present || v == nil:
		return "", fmt.Errorf("the wan_service_mapping_info of service endpoint %q has no %q", endpointID, key)
	case !isString || s == "":
		return "", fmt.Errorf("the wan_service_mapping_info of service endpoint %q: %q must be a non-empty string, got %v", endpointID, key, v)
	}
	return s, nil
}
