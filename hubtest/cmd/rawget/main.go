// Command rawget reads URLs with Go's net/http and nothing else: each
// response body into one reused 1 MiB buffer (io.CopyBuffer to io.Discard),
// or, with -sha256, into a ring of 8 MiB buffers that a second goroutine
// hashes as they fill. It is the floor for what tfconv's remote reads cost
// on a machine (scripts/measure-copy.sh runs it beside curl and tfconv):
// the client's socket reads, and the sha256 every byte from the Hub needs.
//
//	rawget [-sha256] URL...
//
// prints the bytes read, and each body's sha256 with -sha256.
package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
)

func main() {
	sum := flag.Bool("sha256", false, "hash each body on a second goroutine")
	flag.Parse()
	var total int64
	for _, u := range flag.Args() {
		n, digest, err := get(u, *sum)
		if err != nil {
			fmt.Fprintln(os.Stderr, "rawget:", err)
			os.Exit(1)
		}
		total += n
		if *sum {
			fmt.Printf("%x %d %s\n", digest, n, u)
		}
	}
	fmt.Println(total)
}

// get reads u's body, hashing it when sum is set.
func get(u string, sum bool) (int64, []byte, error) {
	resp, err := http.Get(u)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, nil, fmt.Errorf("%s: %s", u, resp.Status)
	}
	if !sum {
		n, err := io.CopyBuffer(io.Discard, resp.Body, make([]byte, 1<<20))
		return n, nil, err
	}
	const ring = 4
	free, full := make(chan []byte, ring), make(chan []byte, ring)
	for range ring {
		free <- make([]byte, 8<<20)
	}
	h := sha256.New()
	done := make(chan hash.Hash)
	go func() {
		for b := range full {
			h.Write(b)
			free <- b[:cap(b)]
		}
		done <- h
	}()
	var n int64
	for {
		b := <-free
		k, err := io.ReadFull(resp.Body, b)
		n += int64(k)
		if k > 0 {
			full <- b[:k]
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			close(full)
			<-done
			return n, nil, err
		}
	}
	close(full)
	return n, (<-done).Sum(nil), nil
}
