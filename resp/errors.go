package resp

import (
	"fmt"
	"strings"
)

// Error replies that many commands share, in Redis's exact words. Command
// specific texts live beside their command; these are the ones a client
// library may match on.
const (
	ErrSyntax          = "ERR syntax error"
	ErrWrongType       = "WRONGTYPE Operation against a key holding the wrong kind of value"
	ErrNotInteger      = "ERR value is not an integer or out of range"
	ErrNotFloat        = "ERR value is not a valid float"
	ErrNotPositive     = "ERR value is out of range, must be positive"
	ErrNoSuchKey       = "ERR no such key"
	ErrIndexRange      = "ERR index out of range"
	ErrOverflow        = "ERR increment or decrement would overflow"
	ErrNoAuth          = "NOAUTH Authentication required."
	ErrWrongPass       = "WRONGPASS invalid username-password pair or user is disabled."
	ErrNoPassword      = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	ErrDBIndex         = "ERR DB index is out of range"
	ErrInvalidDBIndex  = "ERR invalid DB index"
	ErrMaxClients      = "ERR max number of clients reached"
	ErrExecAbort       = "EXECABORT Transaction discarded because of previous errors."
	ErrNestedMulti     = "ERR MULTI calls can not be nested"
	ErrExecNoMulti     = "ERR EXEC without MULTI"
	ErrDiscardNoMulti  = "ERR DISCARD without MULTI"
	ErrWatchInMulti    = "ERR WATCH inside MULTI is not allowed"
	ErrTimeoutNotFloat = "ERR timeout is not a float or out of range"
	ErrTimeoutNotInt   = "ERR timeout is not an integer or out of range"
	ErrTimeoutNegative = "ERR timeout is negative"
	ErrTimeoutRange    = "ERR timeout is out of range"
	ErrUnblocked       = "UNBLOCKED client unblocked via CLIENT UNBLOCK"
	ErrInvalidExpire   = "ERR invalid expire time in '%s' command"
	ErrNoProto         = "NOPROTO unsupported protocol version"
	ErrSameObject      = "ERR source and destination objects are the same"
)

// UnknownCommand is Redis's reply to a command it does not have: the name
// and up to 128 bytes of the first arguments, each quoted.
func UnknownCommand(argv [][]byte) string {
	var args strings.Builder
	for _, a := range argv[1:] {
		if args.Len() >= 128 {
			break
		}
		room := 128 - args.Len()
		if len(a) > room {
			a = a[:room]
		}
		fmt.Fprintf(&args, "'%s' ", a)
	}
	return fmt.Sprintf("ERR unknown command '%s', with args beginning with: %s", clip(argv[0], 128), args.String())
}

// UnknownSubcommand is the reply to "CONTAINER badsub": Redis names the
// subcommand and points at the container's HELP.
func UnknownSubcommand(container string, sub []byte) string {
	return fmt.Sprintf("ERR unknown subcommand '%s'. Try %s HELP.", clip(sub, 128), strings.ToUpper(container))
}

// SubcommandSyntax is Redis's reply to a container subcommand given
// arguments it cannot take (SLOWLOG GET 1 2).
func SubcommandSyntax(container string, sub []byte) string {
	return fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP.", clip(sub, 128), strings.ToUpper(container))
}

// WrongArity is the reply to a command with the wrong number of
// arguments; name is the command's lower-case full name ("get",
// "client|kill").
func WrongArity(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

func clip(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
