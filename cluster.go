package wimro

import "time"

// ClusterMember is one wimd process of a cluster.
type ClusterMember struct {
	ID        string    `json:"id"`
	Address   string    `json:"address"`
	StartedAt time.Time `json:"started_at"`
	Version   string    `json:"version,omitempty"`
	// Health is the status of the member's check in Consul's catalog
	// (passing, warning, critical; empty when wimd registers no check).
	Health string `json:"health,omitempty"`
	// LastSeen is when the process answering last saw the member's
	// membership key held (its watch refreshes every few seconds).
	LastSeen time.Time `json:"last_seen,omitzero"`
}

// ClusterStatus is what a process knows of its cluster (GET /cluster): the
// coordinator in use, who leads, the members and the accounts assigned to
// each, and the accounts whose lease this process holds now.
type ClusterStatus struct {
	Coordinator string              `json:"coordinator"`
	InstanceID  string              `json:"instance_id"`
	Leader      string              `json:"leader"`
	Members     []ClusterMember     `json:"members"`
	Assignments map[string][]string `json:"assignments"`
	Owned       []string            `json:"owned"`
}
