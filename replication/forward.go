package replication

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// A node asks another node to do something for it over the same Raft port:
// a change to the cluster map must be proposed on the metadata group's
// leader, while the node that wants it (the leader of a data group
// recording its leadership, or the node an operator's command reached)
// is usually another. The Mux's forwardGroup carries such requests, one
// per connection:
//
//	request:  | kind (1)   | len (uint32BE) | payload (len)               |
//	answer:   | status (1) | len (uint32BE) | result, or the error's text |
//
// The status keeps the errors the asking node acts on: 0 ok, 1 any
// error (a ForwardError there), 2 the cluster map refused the op
// (errMapRefused), 3 the node asked does not lead (raft.ErrNotLeader:
// ask the leader).

// forwardGroup is the Mux group that carries forwarded requests.
const forwardGroup uint16 = 0xFFFF

// maxForwardPayload bounds a request or answer: a cluster map op or a
// whole map is far smaller.
const maxForwardPayload = 16 << 20

// ForwardError is a refusal answered by the node a request was forwarded to.
type ForwardError struct{ Text string }

func (e *ForwardError) Error() string { return e.Text }

// forwardHandler does one kind of forwarded request.
type forwardHandler func(payload []byte) ([]byte, error)

// serveForwards answers the requests that reach stream until it closes.
func serveForwards(stream *GroupStream, handlers map[byte]forwardHandler, logger *slog.Logger) {
	for {
		conn, err := stream.Accept()
		if err != nil {
			return // closed
		}
		go func() {
			defer conn.Close()
			if err := answerForward(conn, handlers); err != nil {
				logger.Warn("a forwarded request failed", "from", conn.RemoteAddr().String(), "err", err)
			}
		}()
	}
}

func answerForward(conn net.Conn, handlers map[byte]forwardHandler) error {
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	kind, payload, err := readFrame(bufio.NewReader(conn))
	if err != nil {
		return err
	}
	h := handlers[kind]
	var result []byte
	if h == nil {
		err = fmt.Errorf("this node does not serve forwarded requests of kind %d", kind)
	} else {
		result, err = h(payload)
	}
	status := byte(0)
	switch {
	case err == nil:
	case errors.Is(err, errMapRefused):
		status, result = 2, []byte(err.Error())
	case errors.Is(err, raft.ErrNotLeader):
		status, result = 3, nil
	default:
		status, result = 1, []byte(err.Error())
	}
	_, werr := conn.Write(appendFrame(nil, status, result))
	return werr
}

// forward sends one request to the node whose Raft port is addr and
// returns its answer.
func forward(stream *GroupStream, addr raft.ServerAddress, kind byte, payload []byte, timeout time.Duration) ([]byte, error) {
	conn, err := stream.Dial(addr, timeout)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write(appendFrame(nil, kind, payload)); err != nil {
		return nil, err
	}
	status, result, err := readFrame(bufio.NewReader(conn))
	if err != nil {
		return nil, err
	}
	switch status {
	case 0:
		return result, nil
	case 2:
		return nil, fmt.Errorf("%w: %s", errMapRefused, strings.TrimPrefix(string(result), errMapRefused.Error()+": "))
	case 3:
		return nil, raft.ErrNotLeader
	}
	return nil, &ForwardError{Text: string(result)}
}

func appendFrame(b []byte, head byte, payload []byte) []byte {
	b = append(b, head)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	return append(b, payload...)
}

var errFrameTooLong = errors.New("forwarded frame longer than the limit")

func readFrame(r io.Reader) (byte, []byte, error) {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n > maxForwardPayload {
		return 0, nil, errFrameTooLong
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, err
	}
	return head[0], payload, nil
}
