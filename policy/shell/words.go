package shell

import (
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// word is one argv word after quote removal. A dynamic word (one whose value
// or word count depends on an expansion) keeps its source text in val and
// the static text before its first expansion in lead.
type word struct {
	val    string
	dyn    bool
	quoted bool   // dynamic but inside double quotes: still exactly one word
	lead   string // static prefix of a dynamic word
	why    string // what makes it dynamic
}

func staticWord(s string) word { return word{val: s} }

// mayBeOption reports whether the word could start with "-" at run time.
func (w word) mayBeOption() bool {
	if !w.dyn {
		return strings.HasPrefix(w.val, "-")
	}
	if w.why == "process substitution" && w.lead == "" {
		return false // expands to /dev/fd/N
	}
	return w.lead == "" || strings.HasPrefix(w.lead, "-")
}

// resolveWord does quote removal on a parsed word. It never expands
// anything: a part whose value depends on the environment, the file system
// or a command makes the word dynamic.
func resolveWord(w *syntax.Word, src string) word {
	var b strings.Builder
	res := word{}
	setDyn := func(why string, quoted bool) {
		if !res.dyn {
			res.dyn = true
			res.lead = b.String()
			res.why = why
			res.quoted = quoted
		} else if !quoted {
			res.quoted = false
		}
	}
	// Brace expansion: decide on a shallow copy, since SplitBraces mutates.
	if hasBraceCandidate(w) {
		w2 := *w
		w2.Parts = append([]syntax.WordPart(nil), w.Parts...)
		syntax.SplitBraces(&w2)
		for _, p := range w2.Parts {
			if _, ok := p.(*syntax.BraceExp); ok {
				setDyn("brace expansion", false)
				break
			}
		}
	}
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v, glob := unquoteLit(p.Value, i == 0)
			if glob != "" {
				setDyn(glob, false)
			}
			b.WriteString(v)
		case *syntax.SglQuoted:
			if p.Dollar {
				s, err := expand.Literal(nil, &syntax.Word{Parts: []syntax.WordPart{p}})
				if err != nil {
					setDyn("undecodable $'...'", true)
					b.WriteString(p.Value)
				} else {
					b.WriteString(s)
				}
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			for _, ip := range p.Parts {
				if l, ok := ip.(*syntax.Lit); ok {
					b.WriteString(unquoteDbl(l.Value))
				} else {
					setDyn(partKind(ip), true)
					b.WriteString(srcText(ip, src))
				}
			}
		default:
			setDyn(partKind(part), false)
			b.WriteString(srcText(part, src))
		}
	}
	res.val = b.String()
	if res.dyn && res.why == "brace expansion" {
		res.val = srcText(w, src)
	}
	return res
}

func hasBraceCandidate(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.ContainsAny(l.Value, "{") {
			return true
		}
	}
	return false
}

func partKind(p syntax.Node) string {
	switch p.(type) {
	case *syntax.ParamExp:
		return "parameter expansion"
	case *syntax.CmdSubst:
		return "command substitution"
	case *syntax.ArithmExp:
		return "arithmetic expansion"
	case *syntax.ProcSubst:
		return "process substitution"
	case *syntax.ExtGlob:
		return "glob"
	}
	return "expansion"
}

// unquoteLit removes backslash quoting from an unquoted literal and returns
// "glob" as the second value when it holds an unescaped glob character. A
// leading tilde is kept as is: it changes the directory, not the basename.
func unquoteLit(s string, first bool) (string, string) {
	if !strings.ContainsAny(s, "\\*?[") {
		return s, ""
	}
	var b strings.Builder
	glob := ""
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case c == '*' || c == '?':
			glob = "glob"
			b.WriteByte(c)
		case c == '[' && strings.IndexByte(s[i+1:], ']') >= 0:
			glob = "glob"
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), glob
}

// unquoteDbl removes the backslashes that double quotes give meaning to.
func unquoteDbl(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// hdocBody resolves an unquoted here-document body: backslash escapes only
// $ ` \ and newline; any expansion makes it dynamic.
func hdocBody(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		l, ok := p.(*syntax.Lit)
		if !ok {
			return "", false
		}
		v := l.Value
		for i := 0; i < len(v); i++ {
			if v[i] == '\\' && i+1 < len(v) && strings.IndexByte("$`\\\n", v[i+1]) >= 0 {
				i++
				if v[i] == '\n' {
					continue
				}
			}
			b.WriteByte(v[i])
		}
	}
	return b.String(), true
}

// srcText returns a node's text in the source it was parsed from, or its
// printed form when the positions do not fit src.
func srcText(n syntax.Node, src string) string {
	p, e := n.Pos(), n.End()
	if p.IsValid() && e.IsValid() {
		s, t := p.Offset(), e.Offset()
		if s <= t && t <= uint(len(src)) {
			return src[s:t]
		}
	}
	return nodeText(n)
}

// nodeText prints a node as shell source, for reasons and dynamic words.
func nodeText(n syntax.Node) string {
	var b strings.Builder
	if err := syntax.NewPrinter(syntax.Minify(false)).Print(&b, n); err != nil {
		return "?"
	}
	return b.String()
}
