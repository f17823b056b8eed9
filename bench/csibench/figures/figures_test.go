package main

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"blockpool.dev/bench/csibench/results"
)

// fixture is a small recorded run holding every section with a figure.
func fixture(t *testing.T) results.Run {
	t.Helper()
	run, err := results.Read(filepath.Join("testdata", "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// svgTexts parses an image as XML, checks that it is an SVG document with a size, and returns
// the text of its <text> elements: the titles, labels, legends and caption drawn in it.
func svgTexts(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	decoder := xml.NewDecoder(f)
	var texts []string
	root, inText := "", false
	for {
		token, err := decoder.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is no well-formed XML: %v", path, err)
		}
		switch el := token.(type) {
		case xml.StartElement:
			if root == "" {
				root = el.Name.Local
				if root != "svg" || attr(el, "width") == "" || attr(el, "height") == "" {
					t.Fatalf("%s: root element <%s> with width %q and height %q, want <svg> with a size",
						path, root, attr(el, "width"), attr(el, "height"))
				}
			}
			inText = el.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, strings.TrimSpace(string(el)))
			}
		case xml.EndElement:
			inText = false
		}
	}
	if root == "" {
		t.Fatalf("%s holds no element", path)
	}
	return texts
}

func attr(el xml.StartElement, name string) string {
	for _, a := range el.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// drawn reports whether a text was drawn whole, or across the lines of the wrapped caption
// (joined by a space, as the caption broke them at one).
func drawn(texts []string, want string) bool {
	if slices.Contains(texts, want) {
		return true
	}
	all := strings.Join(texts, " ")
	return strings.Contains(all, want)
}

func TestEveryFigureIsAnSVGWithItsSeriesAndTheRunsCaption(t *testing.T) {
	dir := t.TempDir()
	written, err := drawAll(fixture(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	caption := []string{"2026-01-02 03:04 UTC", "abc1234", "Test CPU, 2 cores, 8 GiB", "other builds on the same cores",
		"load average (1 min) 1.25 when it began, 3.50 when it ended",
		"sudo bench/figures.sh -hostpath /tmp/hostpathplugin"}
	want := map[string][]string{
		"bench-node-calls.svg": {"blockpool", "csi-driver-host-path", "NodeStageVolume", "NodeGetVolumeStats",
			"p50", "p90", "p99"},
		"bench-snapshot-sizes.svg": {"CreateSnapshot p50", "CreateSnapshot p90", "FICLONE of the image, p50",
			"1 GiB", "16 GiB", "each holds 1 MiB of data in every 16 MiB"},
		"bench-fio.svg": {"fio, sequential 1 MiB", "fio, random 4 KiB, queue depth 16", "write", "read",
			"in the volume", "on the pool's filesystem", "bare loop device, no driver"},
		"bench-idle-memory.svg": {"node-local pool, per node", "--pool-scope node --mode all", "csi-driver-host-path",
			"93.5 MiB", "17.2 MiB", "the median of 3 rounds"},
	}
	if len(written) != len(want) {
		t.Fatalf("drew %v, want the %d figures", written, len(want))
	}
	for file, series := range want {
		texts := svgTexts(t, filepath.Join(dir, file))
		for _, s := range append(series, caption...) {
			if !drawn(texts, s) {
				t.Errorf("%s: %q not drawn; its texts: %q", file, s, texts)
			}
		}
	}
}

func TestOnlyTheFiguresOfTheSectionsRunAreDrawn(t *testing.T) {
	run := fixture(t)
	run.NodeCalls, run.Snapshots, run.IdleMemory = nil, nil, nil
	dir := t.TempDir()
	written, err := drawAll(run, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(written, []string{"bench-fio.svg"}) {
		t.Fatalf("drew %v, want only bench-fio.svg", written)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("%d files written, want 1", len(entries))
	}

	run.Fio = nil
	if _, err := drawAll(run, dir); err == nil || !strings.Contains(err.Error(), "none of the sections with a figure") {
		t.Fatalf("a run without figures: %v, want an error naming the sections", err)
	}
}

func TestALatencyOfZeroIsRefusedNotDrawnOffTheLogScale(t *testing.T) {
	run := fixture(t)
	run.NodeCalls[0].P50 = 0
	if _, err := drawAll(run, t.TempDir()); err == nil || !strings.Contains(err.Error(), "log scale") {
		t.Fatalf("got %v, want an error about the log scale", err)
	}
}
