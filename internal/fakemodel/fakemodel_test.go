package fakemodel

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// Received holds every request, on any path, with its body: the token
// count and the unknown path too, which Requests (model turns) leaves out.
func TestReceived(t *testing.T) {
	s, err := Anthropic(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct{ path, body string }{
		{"/v1/messages/count_tokens", `{"messages":"count me"}`},
		{"/v1/other", `{"x":"unknown path"}`},
		{"/v1/messages", `{"model":"m","messages":[{"role":"user","content":"turn"}]}`},
	} {
		resp, err := http.Post(s.URL+c.path, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	got := s.Received()
	want := []string{
		"POST /v1/messages/count_tokens\n" + `{"messages":"count me"}`,
		"POST /v1/other\n" + `{"x":"unknown path"}`,
		"POST /v1/messages\n" + `{"model":"m","messages":[{"role":"user","content":"turn"}]}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("Received() = %q, want %q", got, want)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("Requests() holds %d bodies, want the one model turn", n)
	}
}
