package sim

// This file holds what depends on the version of the metadata contract
// (commit versions, partition fencing, cold marks). To run the simulation
// against an older checkout, replace it with compat_ba945fc.go.txt (see
// doc.go).

import (
	"context"
	"errors"
	"fmt"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/partition"
)

// trackVersions: the store has commit versions, so I4 is checked per
// (epoch, version).
const trackVersions = true

func commitVersion(p *meta.Partition) uint64 { return p.Version }

func versionString(p *meta.Partition) string { return fmt.Sprintf(" v%d", p.Version) }

// FencePartition implements meta.Store.
func (c *MetaClient) FencePartition(ctx context.Context, k meta.PartitionKey) error {
	return c.write(opMetaW, "fence partition", func() error { return c.n.inner.FencePartition(bg, k) })
}

// MarkSegmentCold implements meta.Store.
func (c *MetaClient) MarkSegmentCold(ctx context.Context, k meta.PartitionKey, nextOffset, ms int64) error {
	return c.write(opMetaW, fmt.Sprintf("mark segment cold %d", nextOffset), func() error { return c.n.inner.MarkSegmentCold(bg, k, nextOffset, ms) })
}

// offsetForTime asks the hot tier only (there is no cold tier yet).
func offsetForTime(l *partition.Log, ts int64) (int64, bool, error) {
	off, _, found, err := l.OffsetForTime(bg, ts, 0)
	return off, found, err
}

// damagedNext: err is a *partition.DamagedError; where good records resume.
func damagedNext(err error) (int64, bool) {
	var de *partition.DamagedError
	if errors.As(err, &de) {
		return de.Next, true
	}
	return 0, false
}

// itemDeleted: the partition item is fenced for deletion.
func itemDeleted(p *meta.Partition) bool { return p.Deleted }
