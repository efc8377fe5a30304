package main

import (
	"strings"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/internal/version"
)

func TestVersion(t *testing.T) {
	want := version.Line("activation") + "\n"
	for _, arg := range []string{"version", "--version", "-version"} {
		code, stdout, stderr := runCmd(t, "", false, arg)
		if code != exitOK || stdout != want || stderr != "" {
			t.Errorf("activation %s: exit %d, stdout %q, stderr %q; want stdout %q", arg, code, stdout, stderr, want)
		}
	}
	if code, _, stderr := runCmd(t, "", false, "version", "extra"); code != exitUsage || !strings.Contains(stderr, "unexpected argument") {
		t.Errorf("activation version extra: exit %d, stderr %q", code, stderr)
	}
}
