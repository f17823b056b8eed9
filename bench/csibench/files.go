package main

import (
	"math/rand/v2"
	"os"
)

func mkdirAll(path string) error { return os.MkdirAll(path, 0o755) }

// writeData writes n MiB of incompressible bytes to a new file and fsyncs it.
func writeData(path string, n int) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	must(err)
	defer f.Close()
	buf := make([]byte, mb)
	rng := rand.NewChaCha8([32]byte{42})
	for range n {
		_, _ = rng.Read(buf)
		_, err := f.Write(buf)
		must(err)
	}
	must(f.Sync())
}
