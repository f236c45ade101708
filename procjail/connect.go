package procjail

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"
)

// RunConnect implements ConnectCommand: "HOST PORT" — it opens a CONNECT
// tunnel to HOST:PORT through the proxy named by HTTPS_PROXY (with its
// credentials) and relays stdin and stdout over it, as ssh's ProxyCommand
// expects. It returns the process exit code.
func RunConnect(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sandboxd __connect HOST PORT")
		return 2
	}
	if err := connectThrough(os.Getenv("HTTPS_PROXY"), net.JoinHostPort(args[0], args[1]), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "sandboxd: connect %s:%s: %v\n", args[0], args[1], err)
		return 1
	}
	return 0
}

func connectThrough(proxyURL, target string, in io.Reader, out io.Writer) error {
	u, err := url.Parse(proxyURL)
	if err != nil || u.Host == "" {
		return fmt.Errorf("HTTPS_PROXY %q is not a proxy URL", proxyURL)
	}
	c, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if u.User != nil {
		pw, _ := u.User.Password()
		req += "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw)) + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		return err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		reason, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("proxy refused: %s %s", resp.Status, reason)
	}
	done := make(chan struct{})
	go func() {
		io.Copy(c, in)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
		close(done)
	}()
	_, err = io.Copy(out, br)
	return err
}
