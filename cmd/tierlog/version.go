package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// versionString describes the binary from its build information: the
// module version (a tag for `go install ...@v1.2.3`, "(devel)" for a
// build in a checkout), the VCS commit and time when the build recorded
// them ("+dirty" for uncommitted changes), and the Go version.
func versionString(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "unknown (no build information) " + runtime.Version()
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	parts := []string{v}
	var rev, when string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		c := "commit " + rev
		if dirty {
			c += "+dirty"
		}
		if when != "" {
			c += " (" + when + ")"
		}
		parts = append(parts, c)
	}
	goVer := bi.GoVersion
	if goVer == "" {
		goVer = runtime.Version()
	}
	parts = append(parts, goVer, runtime.GOOS+"/"+runtime.GOARCH)
	return strings.Join(parts, ", ")
}

// buildVersion is versionString of this binary.
func buildVersion() string { return versionString(debug.ReadBuildInfo()) }

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, VCS commit and Go version of this binary",
		Args:  checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "tierlog", buildVersion())
			return err
		},
	}
}
