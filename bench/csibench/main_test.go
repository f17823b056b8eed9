package main

import (
	"slices"
	"testing"
)

func TestSectionsThatRunTheReferenceAreNamedBeforeTheRunWithoutIt(t *testing.T) {
	if got := needReference(sectionOrder, ""); !slices.Equal(got, []string{"hostpath", "peer"}) {
		t.Errorf("every section without -hostpath: got %v, want [hostpath peer]", got)
	}
	if got := needReference([]string{"start", "fio"}, ""); len(got) != 0 {
		t.Errorf("sections without the reference need no -hostpath: got %v", got)
	}
	if got := needReference(sectionOrder, "/opt/hostpathplugin"); len(got) != 0 {
		t.Errorf("with -hostpath nothing is missing: got %v", got)
	}
}
