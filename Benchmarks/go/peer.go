// The Go peer of Benchmarks/run-socket and run-egress: net/http, the stack Vault Agent, Vault Proxy and
// oauth2-proxy serve with, run with GOMAXPROCS=1 (one thread of Go code, as the daemon serves on one event loop).
//
//	peer files SOCKET ROOT            serves each file under ROOT at its path (ROOT/v1/sites/x/cookies answers
//	                                  /v1/sites/x/cookies) on the Unix socket SOCKET, from memory, as the
//	                                  SwiftNIO floor does
//	peer proxy ADDRESS UPSTREAM COOKIE  an httputil.ReverseProxy on ADDRESS (host:port, or a Unix socket's path)
//	                                  to UPSTREAM (http://host:port) that sets the request's Cookie header to
//	                                  COOKIE, with keep-alive connections upstream, as nginx's proxy_set_header
//	                                  does in run-egress
//
// Built by Benchmarks/python/demo_daemon.py with Debian's golang-go (`go build`, no modules needed).
package main

import (
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

func listen(address string) net.Listener {
	network := "tcp"
	if strings.HasPrefix(address, "/") {
		network = "unix"
	}
	listener, err := net.Listen(network, address)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		os.Exit(1)
	}
	return listener
}

func files(socket, root string) {
	bodies := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, entry fs.DirEntry, err error) error {
		if err != nil || entry.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		relative, _ := filepath.Rel(root, path)
		bodies["/"+filepath.ToSlash(relative)] = data
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		os.Exit(1)
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := bodies[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write(body)
	})
	http.Serve(listen(socket), handler)
}

func proxy(address, upstream, cookie string) {
	target, err := url.Parse(upstream)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		os.Exit(1)
	}
	reverse := httputil.NewSingleHostReverseProxy(target)
	direct := reverse.Director
	reverse.Director = func(r *http.Request) {
		direct(r)
		r.Header.Set("Cookie", cookie)
	}
	reverse.Transport = &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}
	http.Serve(listen(address), reverse)
}

func main() {
	switch {
	case len(os.Args) == 4 && os.Args[1] == "files":
		files(os.Args[2], os.Args[3])
	case len(os.Args) == 5 && os.Args[1] == "proxy":
		proxy(os.Args[2], os.Args[3], os.Args[4])
	default:
		fmt.Fprintln(os.Stderr, "usage: peer files SOCKET ROOT | peer proxy ADDRESS UPSTREAM COOKIE")
		os.Exit(2)
	}
}
