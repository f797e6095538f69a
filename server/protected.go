package server

import "net"

// errProtectedMode is Redis's reply to a non-loopback client refused by
// protected mode.
const errProtectedMode = "DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Set up an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside."

// protectedModeRefuses reports whether protected mode turns conn away:
// protected-mode is on, no password is set, and the peer is not on the
// loopback interface (unix sockets are always local). As in Redis 7, an
// explicit bind does not lift it: binding 0.0.0.0 without a password is
// exactly what protected mode exists for. Lock should be held.
func (s *Server) protectedModeRefuses(conn net.Conn) bool {
	if !s.cfg.ProtectedMode || s.cfg.RequirePass != "" {
		return false
	}
	return !isLocal(conn.RemoteAddr())
}

// isLocal reports whether addr is a unix socket or a loopback address.
func isLocal(addr net.Addr) bool {
	switch a := addr.(type) {
	case nil:
		return false
	case *net.UnixAddr:
		return true
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
