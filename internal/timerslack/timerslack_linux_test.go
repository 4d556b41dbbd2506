package timerslack

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// helperEnv makes the test binary a helper that prints executable() once
// it reads a line.
const helperEnv = "TIMERSLACK_TEST_PRINT_EXECUTABLE"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		_, _ = io.WriteString(os.Stdout, executable())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestTheProgramRunsAgainUnderItsOwnPath: a program whose file is still
// the running image runs again under its path, so keeps its name; one
// whose file was removed or replaced meanwhile runs /proc/self/exe, the
// image itself.
func TestTheProgramRunsAgainUnderItsOwnPath(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if got := executable(); got != self {
		t.Errorf("executable() = %q, want the test binary's own %q", got, self)
	}
	replace := func(path string) error {
		if err := os.WriteFile(path+".new", []byte("another program"), 0o755); err != nil {
			return err
		}
		return os.Rename(path+".new", path)
	}
	for name, change := range map[string]func(string) error{"removed": os.Remove, "replaced": replace} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "program")
			copyFile(t, self, path)
			cmd := exec.Command(path)
			cmd.Env = append(os.Environ(), helperEnv+"=1")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			cmd.Stdout = &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if err := change(path); err != nil {
				t.Fatal(err)
			}
			_, _ = io.WriteString(stdin, "go\n")
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			if out.String() != "/proc/self/exe" {
				t.Errorf("the image whose file was %s runs again as %q, want /proc/self/exe", name, out.String())
			}
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}
