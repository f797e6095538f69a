// Package resp is redstream's wire: it reads client commands in the Redis
// serialization protocol and encodes replies in RESP2 or RESP3. It knows
// nothing of keys or commands; the server hands it bytes and Go values.
//
// # Requests
//
// A client sends either a multibulk request — an array of bulk strings —
// or an inline request: one line of space-separated words, as a person
// types it into telnet.
//
//	multibulk:  *<argc>\r\n  then argc times  $<len>\r\n<len bytes>\r\n
//	            *2\r\n$4\r\nLLEN\r\n$5\r\nqueue\r\n
//
//	inline:     LLEN queue\r\n      (words may be "double quoted" with
//	                                 \n \r \t \b \a \\ \" \xHH escapes,
//	                                 or 'single quoted' with \' only)
//
// A [Reader] parses requests out of its own buffer without copying: the
// argument slices it returns point into that buffer and stay valid only
// until the next call to [Reader.Fill]. It never allocates ahead of the
// bytes that actually arrived, so "*2000000000\r\n" or "$500000000\r\n"
// costs nothing until the data follows, and the limits below turn hostile
// input into Redis's own protocol errors:
//
//	limit                          error text
//	argc > 2147483647              Protocol error: invalid multibulk length
//	len > proto-max-bulk-len       Protocol error: invalid bulk length
//	count line over 64 KiB         Protocol error: too big mbulk count string
//	inline line over 64 KiB        Protocol error: too big inline request
//	buffered request > query limit ErrQueryBufferLimit (the connection closes)
//
// # Replies
//
// A [Writer] appends encoded replies to a byte buffer. The same call writes
// the RESP3 type when the client chose protocol 3 (HELLO 3) and its RESP2
// fallback otherwise:
//
//	call          RESP3                 RESP2
//	Map(n)        %n\r\n                *2n\r\n
//	Set(n)        ~n\r\n                *n\r\n
//	Null()        _\r\n                 $-1\r\n
//	NullArray()   _\r\n                 *-1\r\n
//	Double(1.5)   ,1.5\r\n              $3\r\n1.5\r\n
//	Bool(true)    #t\r\n                :1\r\n
//	Push(n)       >n\r\n                *n\r\n
//	Verbatim(s)   =len\r\ntxt:s\r\n     $len\r\ns\r\n
//
// Client-facing error texts that many commands share live in errors.go, so
// every command answers with Redis's exact words.
package resp
