package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The cluster group's third column is NATS JetStream with three replicas
// on file storage, fsync'd on every write (sync_interval: always): the
// same durability promise as redstream's R3 (a write is acknowledged once
// a majority has it on disk). It runs when its server can be built.

// natsVersion is the nats-server the bench builds with `go install`.
const natsVersion = "v2.15.2"

const (
	natsStream  = "BENCH"
	natsSubject = "bench.x"
)

// natsServer returns the path of a nats-server binary: built once with
// `go install` into the user's cache directory, as `go run` would build
// it on every run; progress goes to out. An error means NATS cannot be
// measured here.
func natsServer(out io.Writer) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(cache, "redstream-bench", "nats-server-"+natsVersion)
	exe := filepath.Join(bin, "nats-server")
	if _, err := os.Stat(exe); err == nil {
		return exe, nil
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New("no go tool on PATH to build nats-server with")
	}
	fmt.Fprintf(out, "# building nats-server %s with go install (once, into %s) ...\n", natsVersion, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, "install", "github.com/nats-io/nats-server/v2@"+natsVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install nats-server %s: %w: %s", natsVersion, err, strings.TrimSpace(string(out)))
	}
	return exe, nil
}

// natsCluster is three nats-server processes clustered on loopback, with
// one R3 stream.
type natsCluster struct {
	nodes []*Target
	names []string // server_name of each node
	nc    *nats.Conn
	js    jetstream.JetStream
}

// startNATS starts the cluster and creates the stream.
func startNATS(exe string) (*natsCluster, error) {
	ports := make([]int, 6) // client ports, then route ports
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	var routes []string
	for i := range 3 {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[3+i]))
	}
	n := &natsCluster{}
	for i := range 3 {
		name := "n" + strconv.Itoa(i+1)
		t, err := startNATSNode(exe, name, ports[i], ports[3+i], routes)
		if err != nil {
			n.stop()
			return nil, err
		}
		n.nodes, n.names = append(n.nodes, t), append(n.names, name)
	}
	if err := n.connect(); err != nil {
		n.stop()
		return nil, err
	}
	return n, nil
}

func startNATSNode(exe, name string, port, routePort int, routes []string) (*Target, error) {
	dir, err := os.MkdirTemp("", "nats-bench")
	if err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
jetstream { store_dir: %q, sync_interval: always }
cluster { name: bench, listen: 127.0.0.1:%d, routes: [%s] }
`, name, port, dir, routePort, strings.Join(routes, ", "))
	path := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	t := &Target{Name: "nats " + name, Addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir, exe: exe, args: []string{"-c", path}}
	if err := t.launch(filepath.Join(dir, "nats.log")); err != nil {
		return nil, err
	}
	return t, nil
}

// connect connects to the cluster and creates the stream, retrying while
// JetStream elects its meta leader.
func (n *natsCluster) connect() error {
	var urls []string
	for _, t := range n.nodes {
		urls = append(urls, "nats://"+t.Addr)
	}
	deadline := time.Now().Add(time.Minute)
	var err error
	for time.Now().Before(deadline) {
		if n.nc == nil {
			n.nc, err = nats.Connect(strings.Join(urls, ","))
		}
		if n.nc != nil {
			n.js, err = jetstream.New(n.nc)
		}
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err = n.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
				Name: natsStream, Subjects: []string{natsSubject}, Replicas: 3, Storage: jetstream.FileStorage,
			})
			cancel()
			if err == nil {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond) // the cluster is forming: nothing to wait on
	}
	return fmt.Errorf("nats: creating the R3 stream: %w", err)
}

// byRole returns the stream leader's process, then the followers'.
func (n *natsCluster) byRole() ([]*Target, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := n.js.Stream(ctx, natsStream)
	if err != nil {
		return nil, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, err
	}
	if info.Cluster == nil {
		return nil, errors.New("nats: the stream has no cluster info")
	}
	var leader *Target
	var followers []*Target
	for i, name := range n.names {
		if name == info.Cluster.Leader {
			leader = n.nodes[i]
		} else {
			followers = append(followers, n.nodes[i])
		}
	}
	if leader == nil {
		return nil, fmt.Errorf("nats: stream leader %q is not one of ours", info.Cluster.Leader)
	}
	return append([]*Target{leader}, followers...), nil
}

// purge empties the stream between rounds.
func (n *natsCluster) purge() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := n.js.Stream(ctx, natsStream)
	if err != nil {
		return err
	}
	return s.Purge(ctx)
}

// publish runs clients synchronous publishers (js.Publish: each waits
// for its ack before the next) sending total messages of value's size,
// and returns messages per second and each publish's round trip.
func (n *natsCluster) publish(clients, total int, value []byte) (float64, []time.Duration, error) {
	conns := make([]*nats.Conn, clients)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range conns {
		c, err := nats.Connect(n.nc.ConnectedUrl())
		if err != nil {
			return 0, nil, err
		}
		conns[i] = c
	}
	per := total / clients
	trips := make([][]time.Duration, clients)
	errs := make(chan error, clients)
	start := time.Now()
	done := make(chan struct{})
	for i, c := range conns {
		go func() {
			defer func() { done <- struct{}{} }()
			js, err := jetstream.New(c)
			if err != nil {
				errs <- err
				return
			}
			for range per {
				sent := time.Now()
				if _, err := js.Publish(context.Background(), natsSubject, value); err != nil {
					errs <- err
					return
				}
				trips[i] = append(trips[i], time.Since(sent))
			}
		}()
	}
	for range conns {
		<-done
	}
	elapsed := time.Since(start)
	close(errs)
	var all []time.Duration
	for _, t := range trips {
		all = append(all, t...)
	}
	return float64(per*clients) / elapsed.Seconds(), all, <-errs
}

func (n *natsCluster) stop() {
	if n == nil {
		return
	}
	if n.nc != nil {
		n.nc.Close()
	}
	for _, t := range n.nodes {
		t.Stop()
	}
}
