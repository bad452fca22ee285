// Package packaging_test builds the packages as `make package` does
// (scripts/package.sh) and checks them: the Debian package unpacked with
// dpkg-deb and passed through lintian, the OCI image's configuration and
// the wimd binary of its layer.
package packaging_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wimro/wimro/internal/ociimage"
)

// testVersion is the version the test builds: a git describe of a tag
// with commits after it.
const testVersion = "v1.2.3-4-gabcdef0"

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
	buildOut  string
)

// packages runs scripts/package.sh once into a folder of its own and
// returns that folder.
func packages(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "wimro-package-"); buildErr != nil {
			return
		}
		cmd := exec.Command("../scripts/package.sh", buildDir, testVersion)
		cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=1790000000")
		var out []byte
		out, buildErr = cmd.CombinedOutput()
		buildOut = string(out)
	})
	if buildErr != nil {
		t.Fatalf("scripts/package.sh: %v\n%s", buildErr, buildOut)
	}
	return buildDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// The .deb: its control fields, every file with its mode and owner, the
// conffile, maintainer scripts that create the wimro user and its data
// folder, a unit that runs the packaged binary, lintian without an error
// or warning, and a wimd that runs.
func TestDebianPackage(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"dpkg-deb", "lintian"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: `make deps` installs it (scripts/ensure-lintian.sh)", tool)
		}
	}
	deb := filepath.Join(packages(t), "wimro_1.2.3+4+gabcdef0_amd64.deb")

	info := run(t, "dpkg-deb", "--field", deb, "Package", "Version", "Architecture", "Depends", "Section")
	for _, want := range []string{"Package: wimro\n", "Version: 1.2.3+4+gabcdef0\n", "Architecture: amd64\n", "Depends: adduser\n", "Section: net\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("control lacks %q:\n%s", want, info)
		}
	}

	// Every file with its mode and owner; folders only where they matter.
	files := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(run(t, "dpkg-deb", "--contents", deb)), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || strings.HasSuffix(f[5], "/") {
			continue
		}
		files[strings.TrimPrefix(f[5], ".")] = f[0] + " " + f[1]
	}
	want := map[string]string{
		"/usr/bin/wimd":                      "-rwxr-xr-x root/root",
		"/usr/bin/openmano":                  "-rwxr-xr-x root/root",
		"/lib/systemd/system/wimd.service":   "-rw-r--r-- root/root",
		"/etc/wimro/wimd.env":                "-rw------- root/root",
		"/usr/share/man/man1/wimd.1.gz":      "-rw-r--r-- root/root",
		"/usr/share/man/man1/openmano.1.gz":  "-rw-r--r-- root/root",
		"/usr/share/doc/wimro/changelog.gz":  "-rw-r--r-- root/root",
		"/usr/share/doc/wimro/copyright":     "-rw-r--r-- root/root",
		"/usr/share/lintian/overrides/wimro": "-rw-r--r-- root/root",
	}
	for path, mode := range want {
		if files[path] != mode {
			t.Errorf("%s: %q, want %q", path, files[path], mode)
		}
	}
	for path := range files {
		if _, ok := want[path]; !ok {
			t.Errorf("unexpected file %s", path)
		}
	}

	control := t.TempDir()
	run(t, "dpkg-deb", "--control", deb, control)
	if b, _ := os.ReadFile(filepath.Join(control, "conffiles")); strings.TrimSpace(string(b)) != "/etc/wimro/wimd.env" {
		t.Errorf("conffiles: %q", b)
	}
	scripts := map[string][]string{
		"postinst": {"adduser --system --group --home /var/lib/wimro", "install -d -m 0700 -o wimro -g wimro /var/lib/wimro", "daemon-reload"},
		"prerm":    {"deb-systemd-invoke stop wimd.service"},
		"postrm":   {"daemon-reload"},
	}
	for name, wants := range scripts {
		p := filepath.Join(control, name)
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o755 {
			t.Errorf("%s: %v, mode %v", name, err, st)
			continue
		}
		b, _ := os.ReadFile(p)
		for _, w := range wants {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s lacks %q", name, w)
			}
		}
		run(t, "sh", "-n", p) // it parses
	}

	// lintian: no error, no warning (the overrides say why for the two
	// tags that do not apply).
	cmd := exec.Command("lintian", "--fail-on", "error,warning", "--pedantic", deb)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("lintian: %v\n%s", err, out)
	} else if regexp.MustCompile(`(?m)^[EW]: `).Match(out) {
		t.Errorf("lintian reports:\n%s", out)
	}

	root := t.TempDir()
	run(t, "dpkg-deb", "--extract", deb, root)
	if out := run(t, filepath.Join(root, "usr/bin/wimd"), "version"); out != "wimd "+testVersion+"\n" {
		t.Errorf("wimd version: %q", out)
	}
	if out := run(t, filepath.Join(root, "usr/bin/openmano"), "version", "--client"); out != "Client: openmano (wimro) "+testVersion+"\n" {
		t.Errorf("openmano version --client: %q", out)
	}
	unit, _ := os.ReadFile(filepath.Join(root, "lib/systemd/system/wimd.service"))
	contrib, _ := os.ReadFile("../contrib/wimd.service")
	if string(unit) != strings.ReplaceAll(string(contrib), "/usr/local/bin/wimd", "/usr/bin/wimd") || !strings.Contains(string(unit), "\nExecStart=/usr/bin/wimd serve\n") {
		t.Errorf("packaged unit is not contrib/wimd.service running /usr/bin/wimd:\n%s", unit)
	}
	if env, _ := os.ReadFile(filepath.Join(root, "etc/wimro/wimd.env")); !bytes.Equal(env, must(os.ReadFile("../contrib/wimd.env"))) {
		t.Error("packaged wimd.env is not contrib/wimd.env")
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// The image: non-root user, wimd serve as its command, the documented
// port exposed and listened on, the OCI labels, the health check, the
// data folder, and a wimd in its layer that runs.
func TestContainerImage(t *testing.T) {
	t.Parallel()
	dir := packages(t)
	man, cfg, files, err := ociimage.Read(filepath.Join(dir, "wimd-image"))
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if c.User != "10001:10001" {
		t.Errorf("user %q: want the non-root 10001:10001", c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{"/usr/bin/wimd"}) || !slices.Equal(c.Cmd, []string{"serve"}) {
		t.Errorf("entrypoint %q, cmd %q", c.Entrypoint, c.Cmd)
	}
	// The port docs/configuration.md documents (WIMRO_LISTEN's default), on every address.
	readme := string(must(os.ReadFile("../docs/configuration.md")))
	m := regexp.MustCompile("(?m)^\\| `--listen` \\| `WIMRO_LISTEN` \\| `[^`:]*:(\\d+)`").FindStringSubmatch(readme)
	if m == nil {
		t.Fatal("docs/configuration.md's table has no --listen row with a port")
	}
	if _, ok := c.ExposedPorts[m[1]+"/tcp"]; !ok || len(c.ExposedPorts) != 1 || !slices.Contains(c.Env, "WIMRO_LISTEN=0.0.0.0:"+m[1]) {
		t.Errorf("exposed %v, env %q: want port %s", c.ExposedPorts, c.Env, m[1])
	}
	if !slices.Contains(c.Env, "WIMRO_DATA_DIR=/var/lib/wimro") || c.WorkingDir != "/var/lib/wimro" {
		t.Errorf("env %q, working dir %q", c.Env, c.WorkingDir)
	}
	if _, ok := c.Volumes["/var/lib/wimro"]; !ok {
		t.Errorf("volumes %v", c.Volumes)
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.title":    "wimd",
		"org.opencontainers.image.version":  testVersion,
		"org.opencontainers.image.source":   "https://github.com/wimro/wimro",
		"org.opencontainers.image.created":  "2026-09-21T14:13:20Z",
		"org.opencontainers.image.revision": strings.TrimSpace(run(t, "git", "rev-parse", "HEAD")),
	} {
		if c.Labels[k] != v || man.Annotations[k] != v {
			t.Errorf("label %s: %q (manifest %q), want %q", k, c.Labels[k], man.Annotations[k], v)
		}
	}
	if h := c.Healthcheck; h == nil || !slices.Equal(h.Test, []string{"CMD", "/usr/bin/wimd", "health"}) || h.Interval <= 0 || h.Retries <= 0 {
		t.Errorf("healthcheck %+v", h)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" || len(cfg.RootFS.DiffIDs) != len(man.Layers) {
		t.Errorf("config %+v", cfg)
	}

	wimd := files["/usr/bin/wimd"]
	if wimd.Mode != 0o755 || wimd.UID != 0 {
		t.Errorf("/usr/bin/wimd: mode %v uid %d", wimd.Mode, wimd.UID)
	}
	if d := files["/var/lib/wimro"]; !d.Dir || d.Mode != 0o700 || d.UID != 10001 || d.GID != 10001 {
		t.Errorf("/var/lib/wimro: %+v", d)
	}
	if tmp := files["/tmp"]; !tmp.Dir || tmp.Mode != 0o777|fs.ModeSticky {
		t.Errorf("/tmp: %+v", tmp)
	}
	if !strings.Contains(string(files["/etc/passwd"].Data), "wimro:x:10001:10001:") {
		t.Errorf("/etc/passwd: %q", files["/etc/passwd"].Data)
	}
	bin := filepath.Join(t.TempDir(), "wimd")
	if err := os.WriteFile(bin, wimd.Data, 0o755); err != nil {
		t.Fatal(err)
	}
	// Static: it runs without the host's libraries, as it must from an
	// empty base.
	if out := run(t, "file", bin); !strings.Contains(out, "statically linked") {
		t.Errorf("file: %s", out)
	}
	if out := run(t, bin, "version"); out != "wimd "+testVersion+"\n" {
		t.Errorf("wimd version: %q", out)
	}
	// The archive holds the same layout.
	if out := run(t, "tar", "-tf", filepath.Join(dir, "wimd-image.tar")); !strings.Contains(out, "index.json\n") || !strings.Contains(out, "oci-layout\n") ||
		strings.Count(out, "blobs/sha256/") != 4 { // the folder, the layer, the config, the manifest
		t.Errorf("wimd-image.tar: %s", out)
	}
}
