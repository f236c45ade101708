package shell

import (
	"slices"
	"strings"
	"testing"
)

func fields(s string) []string {
	if s == "-" {
		return nil
	}
	return strings.Fields(s)
}

func TestTableHasNoDuplicates(t *testing.T) {
	seen := map[string]int{}
	for i, tc := range table {
		if j, ok := seen[tc.line]; ok {
			t.Errorf("row %d duplicates row %d: %q", i, j, tc.line)
		}
		seen[tc.line] = i
	}
	if len(table) < 250 {
		t.Errorf("table has %d rows, want at least 250", len(table))
	}
}

func TestTable(t *testing.T) {
	runTable(t, table)
}

// runTable checks every row of rows as a subtest.
func runTable(t *testing.T, rows []tcase) {
	for _, tc := range rows {
		t.Run(tc.line, func(t *testing.T) {
			c := Classify(tc.line)
			if tc.unp == "" {
				if c.Unparseable {
					t.Fatalf("Unparseable: %s", c.Reason)
				}
			} else {
				if !c.Unparseable {
					t.Fatalf("parseable (programs %v), want Unparseable with %q", c.Programs, tc.unp)
				}
				if !strings.Contains(strings.ToLower(c.Reason), strings.ToLower(tc.unp)) {
					t.Errorf("Reason = %q, want it to contain %q", c.Reason, tc.unp)
				}
			}
			if tc.progs != "" || tc.unp == "" {
				if got, want := c.Programs, fields(tc.progs); !slices.Equal(got, want) {
					t.Errorf("Programs = %q, want %q", got, want)
				}
			}
			rule, denied := IsProgramDenied(tc.line, stdRules)
			switch {
			case tc.deny == unp:
				if !denied || !strings.HasPrefix(rule, "unparseable: ") {
					t.Errorf("IsProgramDenied = %q, %v; want an unparseable denial", rule, denied)
				}
			case tc.deny == "":
				if denied {
					t.Errorf("IsProgramDenied = %q, want allowed", rule)
				}
			default:
				if !denied || rule != tc.deny {
					t.Errorf("IsProgramDenied = %q, %v; want %q", rule, denied, tc.deny)
				}
			}
			if tc.subs != "" {
				for _, kv := range strings.Split(tc.subs, ";") {
					prog, chains, _ := strings.Cut(kv, "=")
					if got, want := c.Subcommands[prog], strings.Split(chains, ","); !slices.Equal(got, want) {
						t.Errorf("Subcommands[%s] = %q, want %q", prog, got, want)
					}
				}
			}
			if tc.net != "" {
				if got, want := ClassifyNetworkActions(c, tc.line), fields(tc.net); !slices.Equal(got, want) {
					t.Errorf("ClassifyNetworkActions = %q, want %q", got, want)
				}
			}
			if tc.dom != "" {
				if got, want := ExtractDomainsFromCommand(tc.line), fields(tc.dom); !slices.Equal(got, want) {
					t.Errorf("ExtractDomainsFromCommand = %q, want %q", got, want)
				}
			}
			if tc.write != "" {
				f := ClassifyFileWrite(tc.line)
				if tc.write == "-" {
					if f != nil {
						t.Errorf("ClassifyFileWrite = %+v, want nil", *f)
					}
				} else {
					path, reason, _ := strings.Cut(tc.write, "|")
					if f == nil {
						t.Errorf("ClassifyFileWrite = nil, want %q", tc.write)
					} else if f.Path != path || !strings.Contains(f.Reason, reason) {
						t.Errorf("ClassifyFileWrite = %+v, want path %q reason containing %q", *f, path, reason)
					}
				}
			}
			if tc.unread != "" {
				_, why := c.unreadDestination()
				if tc.unread == "-" && why != "" || tc.unread != "-" && !strings.Contains(why, tc.unread) {
					t.Errorf("unreadDestination = %q, want %q", why, tc.unread)
				}
			}
			if tc.opaque != "" {
				if got, want := c.Opaque, fields(tc.opaque); !slices.Equal(got, want) {
					t.Errorf("Opaque = %q, want %q", got, want)
				}
			}
		})
	}
}
