package leases

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"
)

// ParseISC reads ISC dhcpd's dhcpd.leases (dhcpd.leases(5)), a log: only `lease` blocks count,
// and of each address only its last block, which says whether it is in effect (`binding state
// active`) and for which MAC; among a MAC's addresses in effect the one with the latest `starts`
// wins. Statements and blocks it does not know are skipped.
func ParseISC(r io.Reader) (Table, error) {
	tz := newTokenizer(r)
	ledger := newLedger()
	for {
		tok, err := tz.next()
		if err == io.EOF {
			return ledger.table(), nil
		}
		if err != nil {
			return nil, err
		}
		if tok.text == "lease" && !tok.quoted {
			if err := parseLeaseBlock(tz, ledger); err != nil {
				return nil, err
			}
			continue
		}
		if err := tz.skipStatement(tok); err != nil {
			return nil, err
		}
	}
}

type leaseBlock struct {
	ip      netip.Addr
	mac     string
	active  bool
	starts  int64
	ends    time.Time
	line    int
	hasMAC  bool
	invalid string
}

func parseLeaseBlock(tz *tokenizer, ledger *ledger) error {
	addr, err := tz.next()
	if err != nil {
		return unexpectedEOF(err, tz.line, "an address after 'lease'")
	}
	b := leaseBlock{line: addr.line}
	ip, perr := netip.ParseAddr(addr.text)
	if perr != nil {
		return fmt.Errorf("line %d: lease %q: not an IP address", addr.line, addr.text)
	}
	b.ip = ip
	open, err := tz.next()
	if err != nil {
		return unexpectedEOF(err, tz.line, "'{' after the lease address")
	}
	if open.text != "{" || open.quoted {
		return fmt.Errorf("line %d: lease %s: expected '{', found %q", open.line, ip, open.text)
	}
	for {
		words, end, err := tz.statement()
		if err != nil {
			return fmt.Errorf("lease %s (line %d): %w", ip, b.line, err)
		}
		if end {
			break
		}
		b.apply(words)
	}
	// Every block is the address's newest record, whatever it says: a free or expired one ends
	// the previous holder's lease.
	ledger.declare(record{mac: b.mac, active: b.active && b.hasMAC && b.invalid == "", lease: Lease{IP: b.ip, Rank: b.starts, Ends: b.ends}})
	return nil
}

// apply reads one statement of a lease block; unknown ones are skipped.
func (b *leaseBlock) apply(words []token) {
	text := func(i int) string {
		if i < len(words) {
			return words[i].text
		}
		return ""
	}
	switch {
	case text(0) == "binding" && text(1) == "state":
		b.active = text(2) == "active"
	case text(0) == "hardware" && text(1) == "ethernet":
		if mac, ok := normalizeMAC(text(2)); ok {
			b.mac, b.hasMAC = mac, true
		} else {
			b.invalid = "hardware ethernet " + text(2)
		}
	case text(0) == "starts":
		if t, ok := iscTime(words[1:]); ok {
			b.starts = t.Unix()
		} else {
			b.starts = 0
		}
	case text(0) == "ends":
		if t, ok := iscTime(words[1:]); ok {
			b.ends = t
		} else {
			b.ends = time.Time{}
		}
	}
}

// iscTime reads a lease time: "6 2025/11/22 08:26:40" (weekday, then UTC), "epoch 1763800000",
// or "never" (false, as is anything it cannot read: a lease is not refused for a time it
// cannot read, as dhcpd itself writes only these forms).
func iscTime(words []token) (time.Time, bool) {
	text := func(i int) string {
		if i < len(words) {
			return words[i].text
		}
		return ""
	}
	switch text(0) {
	case "never":
		return time.Time{}, false
	case "epoch":
		var sec int64
		if _, err := fmt.Sscan(text(1), &sec); err == nil {
			return time.Unix(sec, 0).UTC(), true
		}
		return time.Time{}, false
	}
	t, err := time.Parse("2006/01/02 15:04:05", text(1)+" "+text(2))
	return t, err == nil
}

func unexpectedEOF(err error, line int, want string) error {
	if err == io.EOF {
		return fmt.Errorf("line %d: file ends where %s was expected", line, want)
	}
	return err
}

type token struct {
	text   string
	quoted bool
	line   int
}

// tokenizer splits dhcpd.leases into words, quoted strings, and the punctuation { } ;.
type tokenizer struct {
	r    *bufio.Reader
	line int
}

func newTokenizer(r io.Reader) *tokenizer {
	return &tokenizer{r: bufio.NewReader(r), line: 1}
}

func (t *tokenizer) next() (token, error) {
	for {
		c, err := t.r.ReadByte()
		if err != nil {
			return token{}, err
		}
		switch c {
		case '\n':
			t.line++
		case ' ', '\t', '\r':
		case '#':
			if _, err := t.r.ReadString('\n'); err != nil {
				return token{}, err
			}
			t.line++
		case '{', '}', ';':
			return token{text: string(c), line: t.line}, nil
		case '"':
			return t.quoted()
		default:
			var sb strings.Builder
			sb.WriteByte(c)
			for {
				c, err := t.r.ReadByte()
				if err == io.EOF {
					return token{text: sb.String(), line: t.line}, nil
				}
				if err != nil {
					return token{}, err
				}
				if c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '{' || c == '}' || c == ';' || c == '"' || c == '#' {
					_ = t.r.UnreadByte()
					return token{text: sb.String(), line: t.line}, nil
				}
				sb.WriteByte(c)
			}
		}
	}
}

func (t *tokenizer) quoted() (token, error) {
	start := t.line
	var sb strings.Builder
	for {
		c, err := t.r.ReadByte()
		if err == io.EOF {
			return token{}, fmt.Errorf("line %d: unterminated quoted string", start)
		}
		if err != nil {
			return token{}, err
		}
		switch c {
		case '"':
			return token{text: sb.String(), quoted: true, line: start}, nil
		case '\\':
			esc, err := t.r.ReadByte()
			if err != nil {
				return token{}, fmt.Errorf("line %d: unterminated quoted string", start)
			}
			if esc == '\n' {
				t.line++
			}
			sb.WriteByte('\\')
			sb.WriteByte(esc)
		case '\n':
			t.line++
			sb.WriteByte(c)
		default:
			sb.WriteByte(c)
		}
	}
}

// statement reads the words up to ';' inside a block; end is true at the block's '}'. A nested
// block (as in failover or option declarations) is skipped whole.
func (t *tokenizer) statement() (words []token, end bool, err error) {
	for {
		tok, err := t.next()
		if err != nil {
			return nil, false, unexpectedEOF(err, t.line, "'}'")
		}
		switch {
		case tok.quoted:
			words = append(words, tok)
		case tok.text == ";":
			return words, false, nil
		case tok.text == "}":
			if len(words) > 0 {
				return nil, false, fmt.Errorf("line %d: statement %q has no ';' before '}'", tok.line, words[0].text)
			}
			return nil, true, nil
		case tok.text == "{":
			if err := t.skipBlock(); err != nil {
				return nil, false, err
			}
			return words, false, nil
		default:
			words = append(words, tok)
		}
	}
}

// skipStatement skips a top-level statement that began with first: up to its ';', or its
// block's closing '}'.
func (t *tokenizer) skipStatement(first token) error {
	tok := first
	for {
		if !tok.quoted {
			switch tok.text {
			case ";":
				return nil
			case "{":
				return t.skipBlock()
			case "}":
				return fmt.Errorf("line %d: unexpected '}'", tok.line)
			}
		}
		var err error
		if tok, err = t.next(); err != nil {
			return unexpectedEOF(err, t.line, "';'")
		}
	}
}

// skipBlock skips to the '}' matching an already read '{'.
func (t *tokenizer) skipBlock() error {
	depth := 1
	for depth > 0 {
		tok, err := t.next()
		if err != nil {
			return unexpectedEOF(err, t.line, "'}'")
		}
		if tok.quoted {
			continue
		}
		switch tok.text {
		case "{":
			depth++
		case "}":
			depth--
		}
	}
	return nil
}
