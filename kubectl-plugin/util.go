package main

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// driverArgs are the driver container's arguments, $(VAR) references expanded from the
// container's literal environment, as kubelet expands them.
type driverArgs map[string]string

func containerArgs(pod *corev1.Pod) driverArgs {
	out := driverArgs{}
	for _, c := range pod.Spec.Containers {
		if c.Name != driverContainer {
			continue
		}
		env := map[string]string{}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				env[e.Name] = e.Value
			}
		}
		args := append(append([]string{}, c.Command...), c.Args...)
		for i, arg := range args {
			name, value, hasValue := strings.Cut(arg, "=")
			if !strings.HasPrefix(name, "--") {
				continue
			}
			if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				value = args[i+1]
			}
			for k, v := range env {
				value = strings.ReplaceAll(value, "$("+k+")", v)
			}
			out[name] = value
		}
	}
	return out
}

func (a driverArgs) value(name, fallback string) string {
	if v, ok := a[name]; ok && v != "" {
		return v
	}
	return fallback
}

// annotationsPatch is a merge patch setting (or, for nil, removing) annotations.
func annotationsPatch(values map[string]*string) []byte {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": values}})
	return patch
}

// prefixed writes each line with a prefix: the destination node's words among the plugin's own.
func prefixed(w io.Writer, prefix string) io.Writer {
	return &linePrefixer{w: w, prefix: []byte(prefix), atStart: true}
}

type linePrefixer struct {
	w       io.Writer
	prefix  []byte
	atStart bool
}

func (p *linePrefixer) Write(b []byte) (int, error) {
	var out bytes.Buffer
	for _, c := range b {
		if p.atStart {
			out.Write(p.prefix)
			p.atStart = false
		}
		out.WriteByte(c)
		if c == '\n' {
			p.atStart = true
		}
	}
	if _, err := p.w.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return len(b), nil
}
