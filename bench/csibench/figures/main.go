// Command figures draws the bench's figures as SVG images from a run that csibench recorded with
// -json, each captioned with the run it came from: its date, the driver's commit, the machine and
// the command that reproduces it. bench/figures.sh runs the bench and then this; run that.
//
//	usage: figures -results RUN.json -out DIR
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"blockpool.dev/bench/csibench/results"
)

func main() {
	in := flag.String("results", "", "the run, as csibench -json wrote it (required)")
	out := flag.String("out", "", "the directory the images are written to (required)")
	flag.Parse()
	if *in == "" || *out == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	run, err := results.Read(*in)
	if err == nil {
		var written []string
		written, err = drawAll(run, *out)
		for _, name := range written {
			fmt.Println(filepath.Join(*out, name))
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "figures: %v\n", err)
		os.Exit(1)
	}
}
