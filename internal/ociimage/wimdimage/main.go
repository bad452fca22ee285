// Command wimdimage builds wimd's container image from a static wimd
// binary, without Docker and from an empty base: `make package` runs it.
// The image runs wimd serve as the non-root user wimro (uid 10001) on
// port 9090, with the data folder /var/lib/wimro (a volume) and
// "wimd health" as its health check. It has no PostgreSQL: give it
// WIMRO_DATABASE_URL.
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"time"

	"github.com/wimro/wimro/internal/ociimage"
)

// The image's user: a fixed uid, so that a runtime that only runs
// non-root images (Kubernetes' runAsNonRoot) can tell from the config.
const (
	uid     = 10001
	dataDir = "/var/lib/wimro"
	port    = "9090"
)

func main() {
	wimd := flag.String("wimd", "bin/wimd", "the static wimd binary (CGO_ENABLED=0)")
	out := flag.String("out", "bin/wimd-image", "the OCI image layout folder to write")
	tarball := flag.String("tar", "bin/wimd-image.tar", "the OCI archive to write (empty: none)")
	version := flag.String("version", "dev", "the image's version (label and tag)")
	revision := flag.String("revision", "", "the source revision (label)")
	caFile := flag.String("ca-file", "/etc/ssl/certs/ca-certificates.crt", "CA bundle to trust in the image (empty or missing: none)")
	flag.Parse()
	if err := build(*wimd, *out, *tarball, *version, *revision, *caFile); err != nil {
		fmt.Fprintln(os.Stderr, "wimdimage:", err)
		os.Exit(1)
	}
}

func build(wimd, out, tarball, version, revision, caFile string) error {
	bin, err := os.ReadFile(wimd)
	if err != nil {
		return err
	}
	// SOURCE_DATE_EPOCH (reproducible builds) dates the image and its files.
	created := time.Unix(0, 0).UTC()
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		secs, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
		}
		created = time.Unix(secs, 0).UTC()
	}
	files := []ociimage.File{
		{Path: "/usr/bin/wimd", Mode: 0o755, Data: bin},
		{Path: "/etc/passwd", Mode: 0o644, Data: fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nwimro:x:%d:%d:wimro:%s:/sbin/nologin\n", uid, uid, dataDir)},
		{Path: "/etc/group", Mode: 0o644, Data: fmt.Appendf(nil, "root:x:0:\nwimro:x:%d:\n", uid)},
		{Path: dataDir, Dir: true, Mode: 0o700, UID: uid, GID: uid},
		{Path: "/tmp", Dir: true, Mode: 0o777 | fs.ModeSticky},
	}
	if caFile != "" {
		// Controllers behind https: the bundle of the build host, as there
		// is no base image to bring one.
		if ca, err := os.ReadFile(caFile); err == nil {
			files = append(files, ociimage.File{Path: "/etc/ssl/certs/ca-certificates.crt", Mode: 0o644, Data: ca})
		} else if !os.IsNotExist(err) {
			return err
		}
	}
	labels := map[string]string{
		"org.opencontainers.image.title":         "wimd",
		"org.opencontainers.image.description":   "wimro WAN Infrastructure Manager daemon (openmano-compatible REST API); needs WIMRO_DATABASE_URL",
		"org.opencontainers.image.version":       version,
		"org.opencontainers.image.created":       created.Format(time.RFC3339),
		"org.opencontainers.image.source":        "https://github.com/wimro/wimro",
		"org.opencontainers.image.url":           "https://github.com/wimro/wimro",
		"org.opencontainers.image.documentation": "https://github.com/wimro/wimro#operations",
		"org.opencontainers.image.vendor":        "wimro",
	}
	if revision != "" {
		labels["org.opencontainers.image.revision"] = revision
	}
	img := ociimage.Image{
		Files:     files,
		Created:   created,
		Tag:       version,
		CreatedBy: "wimdimage (make package)",
		Config: ociimage.RunConfig{
			User:         fmt.Sprintf("%d:%d", uid, uid),
			Entrypoint:   []string{"/usr/bin/wimd"},
			Cmd:          []string{"serve"},
			ExposedPorts: map[string]struct{}{port + "/tcp": {}},
			// Listen on every address: inside a container, 127.0.0.1 is the
			// container's own loopback.
			Env:        []string{"PATH=/usr/bin", "WIMRO_LISTEN=0.0.0.0:" + port, "WIMRO_DATA_DIR=" + dataDir},
			Volumes:    map[string]struct{}{dataDir: {}},
			WorkingDir: dataDir,
			Labels:     labels,
			StopSignal: "SIGTERM",
			Healthcheck: &ociimage.Healthcheck{Test: []string{"CMD", "/usr/bin/wimd", "health"},
				Interval: 30 * time.Second, Timeout: 10 * time.Second, StartPeriod: 30 * time.Second, Retries: 3},
		},
	}
	if _, err := ociimage.Write(out, img); err != nil {
		return err
	}
	if tarball == "" {
		return nil
	}
	return ociimage.Tarball(out, tarball)
}
