package s3local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// VersityGWVersion is the versitygw release the project tests against.
const VersityGWVersion = "v1.8.0"

// VersityGWEnv names the environment variable that points at a versitygw
// binary, overriding the search in FindVersityGW.
const VersityGWEnv = "S3Q_VERSITYGW"

// FindVersityGW returns the path of the versitygw binary: $S3Q_VERSITYGW if
// set, else .bin/versitygw at the root of the module containing the working
// directory (where scripts/install-versitygw puts it), else versitygw on
// PATH. It never downloads anything.
func FindVersityGW() (string, error) {
	if p := os.Getenv(VersityGWEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("find versitygw from $%s: %w", VersityGWEnv, err)
		}
		return p, nil
	}
	if root, ok := moduleRoot(); ok {
		p := filepath.Join(root, ".bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("find versitygw %s: not in $%s, <repo>/.bin/versitygw or PATH; "+
		"run `make test` or `scripts/install-versitygw` to install it", VersityGWVersion, VersityGWEnv)
}

// moduleRoot returns the nearest directory at or above the working
// directory that holds a go.mod.
func moduleRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// StartVersityGW runs versitygw from binPath (found with FindVersityGW when
// empty) as a child process on a free loopback port, with its posix backend
// and versioning in fresh temporary directories:
//
//	ROOT_ACCESS_KEY=... ROOT_SECRET_KEY=... versitygw --port 127.0.0.1:PORT \
//	    --quiet posix --versioning-dir DIR/versions DIR/root
//
// It waits until the gateway answers, creates a versioned bucket, and
// returns. Close kills the process and removes the directories. A missing
// binary is an error, never a reason to skip.
func StartVersityGW(ctx context.Context, binPath string) (*Server, error) {
	if binPath == "" {
		p, err := FindVersityGW()
		if err != nil {
			return nil, err
		}
		binPath = p
	}
	// The port is picked by binding and releasing it, so another process
	// can take it in between: a gateway that exits at once is tried again.
	var err error
	for range 3 {
		var s *Server
		s, err = startVersityGW(ctx, binPath)
		if !errors.Is(err, errExited) {
			return s, err
		}
	}
	return nil, err
}

// VersityGWDirEnv names the environment variable that sets the folder
// a started gateway keeps its data in (a fresh folder inside it, removed
// by Close). Unset: a tmpfs when the machine has one that fits (Linux's
// /dev/shm, see memDir), else the temporary directory. A test suite
// writes tens of thousands of small objects, each a file with its
// versions: on a virtual disk their writes and their removal at Close
// took most of a run's time (removing 13,600 of them: 17 s on the disk,
// 0.8 s on tmpfs).
const VersityGWDirEnv = "S3Q_VERSITYGW_DIR"

// minMemFree is the free space a tmpfs needs to hold a gateway's data.
const minMemFree = 2 << 30

// dataParent returns the folder to make a gateway's data folder in ("":
// the temporary directory).
func dataParent() string {
	if d := os.Getenv(VersityGWDirEnv); d != "" {
		return d
	}
	memOnce.Do(func() { memParent = memDir() })
	return memParent
}

var (
	memOnce   sync.Once
	memParent string
)

// errExited is the error of a gateway that exited before it answered.
var errExited = errors.New("exited before answering")

func startVersityGW(ctx context.Context, binPath string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(dataParent(), "s3q-versitygw-")
	if err != nil {
		return nil, fmt.Errorf("make versitygw dir: %w", err)
	}
	versions, root := filepath.Join(dir, "versions"), filepath.Join(dir, "root")
	for _, d := range []string{versions, root} {
		if err := os.Mkdir(d, 0o755); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("make versitygw dir: %w", err)
		}
	}

	s := &Server{
		Name:      "versitygw",
		Endpoint:  "http://" + port,
		Region:    "us-east-1",
		AccessKey: "s3q",
		SecretKey: "s3q-secret-key",
		Bucket:    DefaultBucket,
	}
	cmd := exec.Command(binPath, "--port", port, "--quiet",
		"posix", "--versioning-dir", versions, root)
	cmd.Env = append(gatewayEnv(),
		"ROOT_ACCESS_KEY="+s.AccessKey,
		"ROOT_SECRET_KEY="+s.SecretKey,
	)
	out := &tailBuffer{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start versitygw: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	s.stop = func() error {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		return os.RemoveAll(dir)
	}

	if err := waitForGateway(ctx, s, exited, out); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// waitForGateway connects to the gateway until it answers, then sets up the
// bucket. It gives up when the process exits or after 30 seconds.
func waitForGateway(ctx context.Context, s *Server, exited <-chan error, out *tailBuffer) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	addr := strings.TrimPrefix(s.Endpoint, "http://")
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("start versitygw: %w (%v): %s", errExited, err, out)
		case <-ctx.Done():
			return fmt.Errorf("start versitygw: no answer on %s: %w: %s", addr, ctx.Err(), out)
		case <-time.After(20 * time.Millisecond):
		}
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			continue
		}
		conn.Close()
		if err := s.connect(ctx); err != nil {
			return fmt.Errorf("set up versitygw: %w: %s", err, out)
		}
		return nil
	}
}

// gatewayEnv is this process's environment without the variables versitygw
// reads its settings from, so that only the command line configures it.
func gatewayEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "VGW_") || strings.HasPrefix(kv, "ROOT_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// freePort returns a loopback address with a port that was free a moment
// ago.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// tailBuffer keeps the last max bytes written to it, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if extra := b.buf.Len() - b.max; extra > 0 {
		b.buf.Next(extra)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimSpace(b.buf.String())
	if s == "" {
		return "(no output)"
	}
	return s
}
