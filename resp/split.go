package resp

// SplitArgs splits an inline request line into words, appending them to
// dst. It follows the rules redis-cli users rely on: words are separated by
// white space; "double quotes" allow \n \r \t \b \a \\ \" and \xHH escapes;
// 'single quotes' allow only \'; a closing quote must be followed by space
// or the end of the line. ok is false for unbalanced quotes.
//
// Plain words alias line; quoted words are fresh copies.
func SplitArgs(dst [][]byte, line []byte) (args [][]byte, ok bool) {
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			return dst, true
		}
		word, next, ok := splitWord(line, i)
		if !ok {
			return dst, false
		}
		dst = append(dst, word)
		i = next
	}
}

// splitWord reads one word starting at line[i] and returns it with the
// index just past it.
func splitWord(line []byte, i int) (word []byte, next int, ok bool) {
	start := i
	for i < len(line) && !endsWord(line[i]) && line[i] != '"' && line[i] != '\'' {
		i++
	}
	if i == len(line) || endsWord(line[i]) {
		return line[start:i:i], i, true // the common case: no quotes
	}
	// A quote opens a quoted section; its closing quote ends the word.
	word = append([]byte(nil), line[start:i]...)
	if line[i] == '"' {
		word, i, ok = doubleQuoted(word, line, i+1)
	} else {
		word, i, ok = singleQuoted(word, line, i+1)
	}
	return word, i, ok
}

// doubleQuoted appends the contents of a "..." section starting after the
// opening quote and returns the index after the closing quote.
func doubleQuoted(word, line []byte, i int) ([]byte, int, bool) {
	for i < len(line) {
		c := line[i]
		switch {
		case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
			word = append(word, unhex(line[i+2])<<4|unhex(line[i+3]))
			i += 4
		case c == '\\' && i+1 < len(line):
			word = append(word, unescape(line[i+1]))
			i += 2
		case c == '"':
			return word, i + 1, i+1 == len(line) || isSpace(line[i+1])
		default:
			word = append(word, c)
			i++
		}
	}
	return nil, 0, false // unterminated
}

// singleQuoted is doubleQuoted for '...', where only \' is an escape.
func singleQuoted(word, line []byte, i int) ([]byte, int, bool) {
	for i < len(line) {
		c := line[i]
		switch {
		case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
			word = append(word, '\'')
			i += 2
		case c == '\'':
			return word, i + 1, i+1 == len(line) || isSpace(line[i+1])
		default:
			word = append(word, c)
			i++
		}
	}
	return nil, 0, false
}

// endsWord reports the bytes that end an unquoted word. Between words
// any white space is skipped, but inside one Redis stops only at these
// four (\v and \f belong to the word).
func endsWord(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}
