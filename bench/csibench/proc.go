package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// kind is a process the bench can start: the driver under test or the reference.
type kind string

const (
	blockpool kind = "blockpool"
	gomock    kind = "gomock"
	hostpath  kind = "hostpath"
)

// attachLimit is what csi-sanity's attach-limit spec needs (as in sanity-tests/run-sanity.sh);
// no other section has more than two volumes attached at once.
const attachLimit = 6

// maxAttached is the attach limit the next launched driver gets: attachLimit, unless a section
// that keeps more volumes attached raises it.
var maxAttached = attachLimit

// launchScope and launchNode are the pool scope and node ID the next launched blockpool gets: a
// shared pool, as most sections publish through the controller, unless a section of several
// nodes says otherwise.
var launchScope, launchNode = "shared", "bench-node"

// proc is one started driver process with a client connection to its socket.
type proc struct {
	kind   kind
	sock   string
	log    string
	cmd    *exec.Cmd
	exited chan struct{}
	ready  time.Duration // process start -> first Probe answering ready
	conn   *grpc.ClientConn
	id     csi.IdentityClient
	ctl    csi.ControllerClient
	node   csi.NodeClient
}

var (
	runningMu sync.Mutex
	running   = map[*proc]bool{}
)

// launch starts a driver of the given kind on the pool directory (blockpool only) and waits for
// its first ready Probe. The socket and log sit in the work directory, named after tag.
func launch(k kind, tag, pool string) *proc {
	p := &proc{kind: k, sock: filepath.Join(cfg.work, tag+".sock"), log: filepath.Join(cfg.work, tag+".log")}
	_ = os.Remove(p.sock)
	switch k {
	case blockpool:
		// A shared pool: the benchmark's flows publish through the controller.
		p.cmd = exec.Command(cfg.driver, "--endpoint", "unix://"+p.sock, "--pool-dir", pool, "--pool-scope", launchScope,
			"--node-id", launchNode, "--max-volumes-per-node", strconv.Itoa(maxAttached), "--log-level", "warn")
		p.cmd.Args = append(p.cmd.Args, launchArgs...)
		if launchJar != "" {
			p.cmd.Env = append(os.Environ(), "BLOCKPOOL_JAR="+launchJar)
		}
	case gomock:
		if cfg.mock == "" {
			fatalf("-mock is required")
		}
		p.cmd = exec.Command(cfg.mock, "-endpoint", "unix://"+p.sock)
	case hostpath:
		if cfg.hostpath == "" {
			fatalf("-hostpath is required")
		}
		// As its own deployment runs it, with attach on so that ControllerPublishVolume is served.
		p.cmd = exec.Command(cfg.hostpath, "-endpoint", "unix://"+p.sock, "-nodeid", "bench-node",
			"-statedir", pool, "-enable-attach", "-maxvolumespernode", strconv.Itoa(maxAttached), "-v", "0")
	}
	logFile, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	must(err)
	defer logFile.Close()
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.exited = make(chan struct{})
	start := time.Now()
	must(p.cmd.Start())
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	runningMu.Lock()
	running[p] = true
	runningMu.Unlock()
	// run.sh's trap stops whatever is listed here should this process itself be killed.
	must(os.WriteFile(p.pidFile(), nil, 0o644))
	p.ready, err = waitReady(p, start)
	if err != nil {
		p.stop()
		fatalf("%s did not get ready: %v; its log:\n%s", k, err, tail(p.log, 30))
	}
	p.conn, err = grpc.NewClient("unix://"+p.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	must(err)
	p.id, p.ctl, p.node = csi.NewIdentityClient(p.conn), csi.NewControllerClient(p.conn), csi.NewNodeClient(p.conn)
	return p
}

func (p *proc) pidFile() string {
	return filepath.Join(dir("pids"), strconv.Itoa(p.cmd.Process.Pid))
}

// waitReady polls the socket in a tight loop (1 ms between tries, so the poller leaves the CPU
// to the starting process): a fresh connection each try, so no gRPC reconnect back-off delays
// the answer. A Probe without ready counts as ready, as the CSI spec says.
func waitReady(p *proc, start time.Time) (time.Duration, error) {
	for {
		if _, err := os.Stat(p.sock); err == nil {
			conn, err := grpc.NewClient("unix://"+p.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				return 0, err
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			resp, err := csi.NewIdentityClient(conn).Probe(ctx, &csi.ProbeRequest{})
			cancel()
			conn.Close()
			if err == nil && (resp.Ready == nil || resp.Ready.Value) {
				return time.Since(start), nil
			}
		}
		select {
		case <-p.exited:
			return 0, errors.New("the process exited")
		default:
		}
		if time.Since(start) > time.Minute {
			return 0, errors.New("not ready within a minute")
		}
		time.Sleep(time.Millisecond)
	}
}

// stop sends SIGTERM and waits (SIGKILL after 30 s).
func (p *proc) stop() {
	if p.conn != nil {
		p.conn.Close()
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	_ = os.Remove(p.pidFile())
	runningMu.Lock()
	delete(running, p)
	runningMu.Unlock()
}

func stopAll() {
	runningMu.Lock()
	ps := make([]*proc, 0, len(running))
	for p := range running {
		ps = append(ps, p)
	}
	runningMu.Unlock()
	for _, p := range ps {
		p.stop()
	}
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// statusKiB reads a VmRSS/VmHWM-like field of /proc/PID/status.
func (p *proc) statusKiB(field string) int64 {
	return kibField(fmt.Sprintf("/proc/%d/status", p.pid()), field)
}

// kibField reads a "Field: N kB" line of a /proc file such as /proc/PID/status or /proc/meminfo.
func kibField(path, field string) int64 {
	f, err := os.Open(path)
	must(err)
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			n, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			must(err)
			return n
		}
	}
	fatalf("no %s: in %s", field, path)
	return 0
}

func (p *proc) rss() int64 { return p.statusKiB("VmRSS") }
func (p *proc) hwm() int64 { return p.statusKiB("VmHWM") }

// cpu is the process's own user+system time, and that of the children it waited for (mkfs,
// mount, ... for blockpool), from /proc/PID/stat.
func (p *proc) cpu() (own, children time.Duration) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid()))
	must(err)
	// Fields after the command name, which is in parentheses and may hold spaces.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	tick := func(i int) time.Duration { // i: the field's number in proc(5)
		n, err := strconv.ParseInt(fields[i-3], 10, 64)
		must(err)
		return time.Duration(n) * time.Second / 100 // USER_HZ is 100 on Linux
	}
	return tick(14) + tick(15), tick(16) + tick(17)
}

func tail(path string, lines int) string {
	data, _ := os.ReadFile(path)
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
