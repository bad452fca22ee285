// Package ociimage writes a container image as an OCI image layout (and
// a tarball of it) from a list of files and a configuration, with the
// standard library alone: the image is built from an empty base (no
// registry, no Docker daemon), and its bytes depend only on the inputs
// (fixed times, sorted entries, gzip without a name or time), so two
// builds of one commit give one digest. Read opens a layout again, for
// the tests that check what was built.
package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Media types of the OCI image specification.
const (
	MediaIndex    = "application/vnd.oci.image.index.v1+json"
	MediaManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaConfig   = "application/vnd.oci.image.config.v1+json"
	MediaLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// File is one entry of the image's only layer.
type File struct {
	Path     string // absolute, e.g. /usr/bin/wimd
	Mode     fs.FileMode
	Dir      bool
	UID, GID int
	Data     []byte
}

// Healthcheck is the check a container runtime runs (Docker's
// extension of the image config; durations in nanoseconds on the wire).
type Healthcheck struct {
	Test        []string      `json:"Test"`
	Interval    time.Duration `json:"Interval,omitempty"`
	Timeout     time.Duration `json:"Timeout,omitempty"`
	StartPeriod time.Duration `json:"StartPeriod,omitempty"`
	Retries     int           `json:"Retries,omitempty"`
}

// RunConfig is the "config" of an image configuration.
type RunConfig struct {
	User         string              `json:"User,omitempty"`
	ExposedPorts map[string]struct{} `json:"ExposedPorts,omitempty"`
	Env          []string            `json:"Env,omitempty"`
	Entrypoint   []string            `json:"Entrypoint,omitempty"`
	Cmd          []string            `json:"Cmd,omitempty"`
	Volumes      map[string]struct{} `json:"Volumes,omitempty"`
	WorkingDir   string              `json:"WorkingDir,omitempty"`
	Labels       map[string]string   `json:"Labels,omitempty"`
	StopSignal   string              `json:"StopSignal,omitempty"`
	Healthcheck  *Healthcheck        `json:"Healthcheck,omitempty"`
}

// Config is an image configuration.
type Config struct {
	Created      time.Time `json:"created"`
	Architecture string    `json:"architecture"`
	OS           string    `json:"os"`
	Config       RunConfig `json:"config"`
	RootFS       struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
	History []struct {
		Created   time.Time `json:"created"`
		CreatedBy string    `json:"created_by"`
	} `json:"history,omitempty"`
}

// Descriptor points at a blob.
type Descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
	} `json:"platform,omitempty"`
}

// Manifest is an image manifest.
type Manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Config        Descriptor        `json:"config"`
	Layers        []Descriptor      `json:"layers"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// Index is a layout's index.json.
type Index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []Descriptor `json:"manifests"`
}

// Image is what Write writes: one layer of files and the run config;
// Tag names it in the index (org.opencontainers.image.ref.name).
type Image struct {
	Files        []File
	Config       RunConfig
	Created      time.Time
	Architecture string // default amd64
	Tag          string
	CreatedBy    string // the history line
}

// Write writes img as an OCI image layout in dir (created, or emptied of
// a previous layout) and returns its manifest's descriptor.
func Write(dir string, img Image) (Descriptor, error) {
	if img.Architecture == "" {
		img.Architecture = "amd64"
	}
	layer, diffID, err := layerOf(img.Files, img.Created)
	if err != nil {
		return Descriptor{}, err
	}
	if err := os.RemoveAll(filepath.Join(dir, "blobs")); err != nil {
		return Descriptor{}, err
	}
	b := blobs{dir: dir}
	layerDesc, err := b.put(MediaLayer, layer)
	if err != nil {
		return Descriptor{}, err
	}
	cfg := Config{Created: img.Created.UTC(), Architecture: img.Architecture, OS: "linux", Config: img.Config}
	cfg.RootFS.Type = "layers"
	cfg.RootFS.DiffIDs = []string{diffID}
	cfg.History = append(cfg.History, struct {
		Created   time.Time `json:"created"`
		CreatedBy string    `json:"created_by"`
	}{img.Created.UTC(), img.CreatedBy})
	raw, err := json.Marshal(cfg)
	if err != nil {
		return Descriptor{}, err
	}
	cfgDesc, err := b.put(MediaConfig, raw)
	if err != nil {
		return Descriptor{}, err
	}
	raw, err = json.Marshal(Manifest{SchemaVersion: 2, MediaType: MediaManifest, Config: cfgDesc, Layers: []Descriptor{layerDesc},
		Annotations: img.Config.Labels})
	if err != nil {
		return Descriptor{}, err
	}
	man, err := b.put(MediaManifest, raw)
	if err != nil {
		return Descriptor{}, err
	}
	man.Platform = &struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
	}{img.Architecture, "linux"}
	if img.Tag != "" {
		man.Annotations = map[string]string{"org.opencontainers.image.ref.name": img.Tag}
	}
	if raw, err = json.MarshalIndent(Index{SchemaVersion: 2, MediaType: MediaIndex, Manifests: []Descriptor{man}}, "", "  "); err != nil {
		return Descriptor{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "index.json"), raw, 0o644); err != nil {
		return Descriptor{}, err
	}
	return man, os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion": "1.0.0"}`), 0o644)
}

type blobs struct{ dir string }

func (b blobs) put(mediaType string, data []byte) (Descriptor, error) {
	sum := sha256.Sum256(data)
	hexSum := hex.EncodeToString(sum[:])
	p := filepath.Join(b.dir, "blobs", "sha256", hexSum)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return Descriptor{}, err
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return Descriptor{}, err
	}
	return Descriptor{MediaType: mediaType, Digest: "sha256:" + hexSum, Size: int64(len(data))}, nil
}

// layerOf is the gzipped tar of files, with their parent folders, and
// the digest of the tar (the layer's diff id).
func layerOf(files []File, mtime time.Time) ([]byte, string, error) {
	entries := map[string]File{}
	for _, f := range files {
		clean := path.Clean("/" + f.Path)
		f.Path = clean
		entries[clean] = f
		for d := path.Dir(clean); d != "/"; d = path.Dir(d) {
			if _, ok := entries[d]; !ok {
				entries[d] = File{Path: d, Dir: true, Mode: 0o755}
			}
		}
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, n := range names {
		f := entries[n]
		h := &tar.Header{Name: strings.TrimPrefix(n, "/"), Mode: int64(f.Mode.Perm()), Uid: f.UID, Gid: f.GID,
			ModTime: mtime.UTC(), Format: tar.FormatPAX}
		if f.Mode&fs.ModeSticky != 0 {
			h.Mode |= 0o1000 // /tmp
		}
		if f.Dir {
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, "", err
		}
		if !f.Dir {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, "", err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(raw.Bytes())
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return nil, "", err
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return gz.Bytes(), "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Tarball writes the layout in dir as an uncompressed tar to out: an
// "oci-archive" that podman load, skopeo copy oci-archive: and docker
// load (25+) read.
func Tarball(dir, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name, h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname = filepath.ToSlash(rel), time.Unix(0, 0), 0, 0, "", ""
		if d.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Read is the image in a layout: its manifest, configuration and the
// files of its layers (by absolute path), each blob checked against its
// digest.
func Read(dir string) (Manifest, Config, map[string]File, error) {
	var idx Index
	if err := readJSON(filepath.Join(dir, "index.json"), &idx); err != nil {
		return Manifest{}, Config{}, nil, err
	}
	if len(idx.Manifests) != 1 {
		return Manifest{}, Config{}, nil, fmt.Errorf("index.json: %d manifests, want 1", len(idx.Manifests))
	}
	var man Manifest
	if err := readBlob(dir, idx.Manifests[0], &man); err != nil {
		return Manifest{}, Config{}, nil, err
	}
	var cfg Config
	if err := readBlob(dir, man.Config, &cfg); err != nil {
		return man, Config{}, nil, err
	}
	files := map[string]File{}
	for _, l := range man.Layers {
		data, err := blob(dir, l)
		if err != nil {
			return man, cfg, nil, err
		}
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return man, cfg, nil, err
		}
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return man, cfg, nil, err
			}
			content, err := io.ReadAll(tr)
			if err != nil {
				return man, cfg, nil, err
			}
			p := "/" + strings.TrimSuffix(h.Name, "/")
			mode := fs.FileMode(h.Mode).Perm()
			if h.Mode&0o1000 != 0 {
				mode |= fs.ModeSticky
			}
			files[p] = File{Path: p, Mode: mode, Dir: h.Typeflag == tar.TypeDir, UID: h.Uid, GID: h.Gid, Data: content}
		}
	}
	return man, cfg, files, nil
}

func readJSON(p string, v any) error {
	data, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

func blob(dir string, d Descriptor) ([]byte, error) {
	algo, hexSum, ok := strings.Cut(d.Digest, ":")
	if !ok || algo != "sha256" {
		return nil, fmt.Errorf("digest %q: not sha256", d.Digest)
	}
	data, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", hexSum))
	if err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != hexSum || int64(len(data)) != d.Size {
		return nil, fmt.Errorf("blob %s: content does not match its digest or size", d.Digest)
	}
	return data, nil
}

func readBlob(dir string, d Descriptor, v any) error {
	data, err := blob(dir, d)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}
