package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tierlog/tierlog/pkg/segment"
)

// Configuration from the environment: every flag of `tierlog serve` (and
// --url of the client commands) also comes from a TIERLOG_* variable named
// after the flag, --compact-interval from TIERLOG_COMPACT_INTERVAL. A flag
// on the command line wins over its variable; an empty variable counts as
// unset. The defaults themselves are the flags' (or, where a flag's default
// is 0, the server's: see pkg/server.Config); none is repeated here.

// envPrefix starts every variable the command line reads.
const envPrefix = "TIERLOG_"

// envName is the variable of a flag: "compact-interval" is
// TIERLOG_COMPACT_INTERVAL.
func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// bindEnv gives the named flags of c (every flag when names is empty) an
// environment variable: their usage names it, and before c runs a variable
// that is set replaces the default of a flag not given on the command
// line. A variable that does not parse is a usage error naming it.
func bindEnv(c *cobra.Command, names ...string) {
	bound := map[string]bool{}
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if len(names) > 0 && !contains(names, f.Name) {
			return
		}
		bound[f.Name] = true
		f.Usage += fmt.Sprintf(" (env %s)", envName(f.Name))
	})
	prev := c.PreRunE
	c.PreRunE = func(cmd *cobra.Command, args []string) error {
		if err := applyEnv(cmd.Flags(), bound, os.LookupEnv, cmd.CommandPath()); err != nil {
			return err
		}
		if prev != nil {
			return prev(cmd, args)
		}
		return nil
	}
}

// applyEnv sets every bound flag not on the command line from its
// variable, if lookup finds one that is not empty.
func applyEnv(fs *pflag.FlagSet, bound map[string]bool, lookup func(string) (string, bool), path string) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || !bound[f.Name] || f.Changed {
			return
		}
		name := envName(f.Name)
		v, ok := lookup(name)
		if !ok || v == "" {
			return
		}
		if serr := f.Value.Set(v); serr != nil {
			err = usagef("%s=%q: %v (see --%s in '%s --help')", name, v, serr, f.Name, path)
		}
	})
	return err
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// offDuration is a duration flag where "off" (or any negative duration)
// turns the feature off, and 0 means the server's default, as in
// pkg/server.Config.
type offDuration struct{ d *time.Duration }

func (o offDuration) String() string {
	if o.d == nil || *o.d == 0 {
		return "0" // pflag prints no default for "0"
	}
	if *o.d < 0 {
		return "off"
	}
	return o.d.String()
}

func (o offDuration) Set(s string) error {
	if strings.EqualFold(s, "off") {
		*o.d = -1
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 30s, or off")
	}
	if d < 0 {
		d = -1
	}
	*o.d = d
	return nil
}

func (o offDuration) Type() string { return "duration|off" }

// levelFlag is a slog level flag: debug, info, warn or error (slog's
// names, any case); the zero level, info, is the default.
type levelFlag struct{ l *slog.Level }

func (f levelFlag) String() string {
	if f.l == nil {
		return slog.LevelInfo.String()
	}
	return strings.ToLower(f.l.String())
}

func (f levelFlag) Set(s string) error {
	if strings.EqualFold(s, "warning") {
		s = "warn"
	}
	if err := f.l.UnmarshalText([]byte(s)); err != nil {
		return fmt.Errorf("want debug, info, warn or error")
	}
	return nil
}

func (f levelFlag) Type() string { return "level" }

// latencyFlag is a hot-tier latency profile flag: none, efs-regional or
// efs-onezone (segment.ParseLatencyProfile); the zero profile, none, is
// the default.
type latencyFlag struct{ p *segment.LatencyProfile }

func (f latencyFlag) String() string {
	if f.p == nil {
		return segment.LatencyProfile{}.String()
	}
	return f.p.String()
}

func (f latencyFlag) Set(s string) error {
	p, err := segment.ParseLatencyProfile(s)
	if err != nil {
		return fmt.Errorf("want one of %s", strings.Join(segment.LatencyProfileNames(), ", "))
	}
	*f.p = p
	return nil
}

func (f latencyFlag) Type() string { return "profile" }
