package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/tierlog/tierlog/pkg/meta/local"
	tlserver "github.com/tierlog/tierlog/pkg/server"
)

func newRepairCmd() *cobra.Command {
	var dataDir string
	var dryRun, yes bool
	c := &cobra.Command{
		Use:   "repair",
		Short: "Repair a damaged metadata journal of the local backend (report first with --dry-run)",
		Long: `Repair the metadata store of a local-backend data dir whose journal is
damaged (tierlog serve refuses to start and names this command). The server
must be stopped.

A repair cuts the journal at the damaged frame: every metadata change from
there on is lost (commits of records, topic and group changes), and the
cut bytes are saved next to the journal (journal-….log.dropped-at-<n>).
Records whose commits are lost are not served again; producers that were
answered for them should send them again (with an Idempotency-Key, a retry
after the repair appends them once). See docs/operations.md.

--dry-run reports what a repair would drop and changes nothing; without
--dry-run, --yes is required.`,
		Example: `  tierlog repair --data-dir ./.tierlog --dry-run
  tierlog repair --data-dir ./.tierlog --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dataDir == "" {
				dataDir = tlserver.DefaultDataDir
			}
			return repair(cmd.OutOrStdout(), tlserver.MetaDir(dataDir), dryRun, yes)
		},
	}
	f := c.Flags()
	f.StringVar(&dataDir, "data-dir", "", "the local backend's data dir (default "+tlserver.DefaultDataDir+", the server's)")
	f.BoolVar(&dryRun, "dry-run", false, "report what a repair would drop; change nothing")
	f.BoolVar(&yes, "yes", false, "repair without asking")
	bindEnv(c, "data-dir")
	return c
}

// errNotRepaired is a repair that was reported but not done (no --yes).
var errNotRepaired = errors.New("nothing changed: run again with --yes to repair, or --dry-run to only report")

func repair(out io.Writer, metaDir string, dryRun, yes bool) error {
	if _, err := os.Stat(metaDir); err != nil {
		return fmt.Errorf("metadata store %s: %w", metaDir, err)
	}
	s, err := local.Open(metaDir)
	if err == nil {
		r := s.Recovery()
		if cerr := s.Close(); cerr != nil {
			return cerr
		}
		if r.Cause != "" {
			fmt.Fprintf(out, "the journal needed no repair beyond what opening it does: %s\n", r.Cause)
		} else {
			fmt.Fprintln(out, "the metadata journal is intact: nothing to repair")
		}
		return nil
	}
	if !errors.Is(err, local.ErrCorrupt) {
		return fmt.Errorf("open metadata: %w", err)
	}
	fmt.Fprintf(out, "damaged: %v\n", err)
	// What a repair drops, found on a copy: nothing here changes.
	tmp, err := os.MkdirTemp("", "tierlog-repair-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.CopyFS(tmp, os.DirFS(metaDir)); err != nil {
		return fmt.Errorf("copy the metadata store: %w", err)
	}
	r, err := openRepaired(tmp)
	if err != nil {
		return fmt.Errorf("a repair cannot open this store (the damage is not in the journal's last frames): %w", err)
	}
	report(out, r)
	switch {
	case dryRun:
		return nil
	case !yes:
		return errNotRepaired
	}
	if r, err = openRepaired(metaDir); err != nil {
		return err
	}
	fmt.Fprintf(out, "repaired: %s cut at byte %d; the cut bytes are in %s\n", r.Journal, r.Offset, filepath.Join(metaDir, r.Saved))
	return nil
}

// openRepaired opens the store in dir cutting a damaged journal, closes it,
// and returns what it did.
func openRepaired(dir string) (local.Recovery, error) {
	s, err := local.Open(dir, local.WithTruncateDamaged())
	if err != nil {
		return local.Recovery{}, err
	}
	r := s.Recovery()
	return r, s.Close()
}

func report(out io.Writer, r local.Recovery) {
	fmt.Fprintf(out, "a repair cuts %s at byte %d: %d bytes", r.Journal, r.Offset, r.DroppedBytes)
	if r.DroppedFrames > 0 {
		fmt.Fprintf(out, ", the damaged frame and %d intact frames after it (committed metadata changes)", r.DroppedFrames)
	}
	fmt.Fprintln(out)
	if r.LostCommitted {
		fmt.Fprintln(out, "committed metadata changes are lost: records whose commits they were are not served again, and topic, group and offset changes among them are undone")
	}
	if r.Cause != "" {
		fmt.Fprintf(out, "found: %s\n", r.Cause)
	}
}
