package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
)

// Conn is a minimal RESP2 client: it writes pre-encoded requests and reads
// replies with as little work as possible, so the load generator costs
// both servers the same and little.
type Conn struct {
	c net.Conn
	r *bufio.Reader
}

// Reply is a decoded reply; aggregates keep their elements.
type Reply struct {
	Type  byte
	Str   string
	Int   int64
	Elems []Reply
	Null  bool
}

// Dial connects to addr.
func Dial(addr string) (*Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return newConn(c), nil
}

func newConn(c net.Conn) *Conn { return &Conn{c: c, r: bufio.NewReaderSize(c, 64<<10)} }

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Encode builds a multibulk request.
func Encode(args ...string) []byte {
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}

// Do sends one command and reads its reply; an error reply is an error.
func (c *Conn) Do(args ...string) (Reply, error) {
	if _, err := c.c.Write(Encode(args...)); err != nil {
		return Reply{}, err
	}
	r, err := c.Read()
	if err == nil && r.Type == '-' {
		err = fmt.Errorf("%s: %s", args[0], r.Str)
	}
	return r, err
}

// Send writes raw request bytes.
func (c *Conn) Send(req []byte) error {
	_, err := c.c.Write(req)
	return err
}

// Skip reads n replies without decoding their contents; it fails on an
// error reply.
func (c *Conn) Skip(n int) error {
	for range n {
		r, err := c.Read()
		if err != nil {
			return err
		}
		if r.Type == '-' {
			return errors.New(r.Str)
		}
	}
	return nil
}

// Read reads one reply.
func (c *Conn) Read() (Reply, error) {
	line, err := c.line()
	if err != nil {
		return Reply{}, err
	}
	if len(line) == 0 {
		return Reply{}, errors.New("bench: empty reply line")
	}
	t, rest := line[0], line[1:]
	switch t {
	case '+', '-':
		return Reply{Type: t, Str: string(rest)}, nil
	case ':':
		n, err := strconv.ParseInt(string(rest), 10, 64)
		return Reply{Type: t, Int: n}, err
	case '$':
		n, err := strconv.Atoi(string(rest))
		if err != nil || n < 0 {
			return Reply{Type: t, Null: true}, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return Reply{}, err
		}
		return Reply{Type: t, Str: string(buf[:n])}, nil
	case '*':
		n, err := strconv.Atoi(string(rest))
		if err != nil || n < 0 {
			return Reply{Type: t, Null: true}, err
		}
		out := Reply{Type: t, Elems: make([]Reply, n)}
		for i := range out.Elems {
			if out.Elems[i], err = c.Read(); err != nil {
				return Reply{}, err
			}
		}
		return out, nil
	}
	return Reply{}, fmt.Errorf("bench: unexpected reply %q", line)
}

func (c *Conn) line() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("bench: bad line %q", line)
	}
	return line[:len(line)-2], nil
}
