package shell

import "strings"

// optSpec is one program's option grammar: which options take a value.
type optSpec struct {
	short   string   // short option letters that take a value (-u USER, -uUSER)
	long    []string // long options that take a value (--user USER, --user=USER)
	str     string   // short letters whose value is a shell command string
	strLong []string // long options whose value is a shell command string
}

// opts is the result of scanning options.
type opts struct {
	next int               // index of the first operand
	seen map[string][]word // "-u" / "--user" → values ("" value for flags)
	strs []word            // shell command strings given with str options
	bad  string            // non-empty: an option word that is not static
	ops  []word            // operands (scanAll only)
}

func (o opts) has(names ...string) bool {
	for _, n := range names {
		if _, ok := o.seen[n]; ok {
			return true
		}
	}
	return false
}

func (o opts) val(names ...string) (word, bool) {
	for _, n := range names {
		if v, ok := o.seen[n]; ok && len(v) > 0 {
			return v[len(v)-1], true
		}
	}
	return word{}, false
}

// scanOpts reads options from args[i:] up to the first operand or "--".
func scanOpts(args []word, i int, sp optSpec) opts {
	o := opts{seen: map[string][]word{}}
	for i < len(args) {
		w := args[i]
		if w.dyn {
			if w.mayBeOption() {
				o.bad = w.val
			}
			break
		}
		v := w.val
		if v == "--" {
			i++
			break
		}
		if len(v) < 2 || v[0] != '-' {
			break
		}
		if strings.HasPrefix(v, "--") {
			name, val, hasEq := strings.Cut(v, "=")
			name = "--" + sp.longName(name[2:])
			takes := contains(sp.long, name[2:])
			isStr := contains(sp.strLong, name[2:])
			if (takes || isStr) && !hasEq {
				if i+1 < len(args) {
					o.add(name, args[i+1], isStr)
					i += 2
					continue
				}
				i++
				continue
			}
			if hasEq {
				o.add(name, word{val: val}, isStr)
			} else {
				o.add(name, word{}, false)
			}
			i++
			continue
		}
		// A cluster of short options: -abc, -uUSER, -u USER.
		i++
		for j := 1; j < len(v); j++ {
			c := v[j]
			name := "-" + string(c)
			isStr := strings.IndexByte(sp.str, c) >= 0
			if strings.IndexByte(sp.short, c) >= 0 || isStr {
				if j+1 < len(v) {
					o.add(name, word{val: v[j+1:]}, isStr)
				} else if i < len(args) {
					o.add(name, args[i], isStr)
					i++
				}
				break
			}
			o.add(name, word{}, false)
		}
	}
	o.next = i
	return o
}

// scanAll reads options anywhere in args[i:] (for programs that accept
// options after operands); o.next is len(args) and the operands are in
// o.ops.
func scanAll(args []word, i int, sp optSpec) opts {
	all := opts{seen: map[string][]word{}}
	for i < len(args) {
		o := scanOpts(args, i, sp)
		for k, v := range o.seen {
			all.seen[k] = append(all.seen[k], v...)
		}
		all.strs = append(all.strs, o.strs...)
		if o.bad != "" && all.bad == "" {
			all.bad = o.bad
		}
		if o.next >= len(args) {
			break
		}
		if o.next > i && args[o.next-1].val == "--" {
			all.ops = append(all.ops, args[o.next:]...)
			break
		}
		all.ops = append(all.ops, args[o.next])
		i = o.next + 1
	}
	all.next = len(args)
	return all
}

func (o *opts) add(name string, v word, isStr bool) {
	o.seen[name] = append(o.seen[name], v)
	if isStr {
		o.strs = append(o.strs, v)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// longName resolves an abbreviated long option the way getopt_long does:
// "--comm" is "--command" when no listed option is named exactly "comm".
// Without this, `su --comm='git push'` and `chroot --user u / git push`
// hid their command (the abbreviation trap). A prefix of a command-string
// option wins over a prefix of a value option (fail closed: the string is
// analysed as code); a name that prefixes no listed option is kept as is.
func (sp optSpec) longName(n string) string {
	if n == "" || contains(sp.long, n) || contains(sp.strLong, n) {
		return n
	}
	for _, l := range sp.strLong {
		if strings.HasPrefix(l, n) {
			return l
		}
	}
	for _, l := range sp.long {
		if strings.HasPrefix(l, n) {
			return l
		}
	}
	return n
}
