package lambdafn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tierlog/tierlog/pkg/compactor"
	"github.com/tierlog/tierlog/pkg/meta"
)

// Compactor modes, reported in the answer and the EMF line.
const (
	ModeScheduled = "scheduled" // EventBridge schedule: a full pass
	ModeRolled    = "rolled"    // produce's "segment rolled": those partitions only
	ModeFallback  = "full"      // a payload not recognised: a full pass
)

// CompactorResult is the compactor function's answer (asynchronous and
// scheduled invokes discard it; a direct invoke shows it).
type CompactorResult struct {
	Mode             string  `json:"mode"`
	Partitions       int     `json:"partitions"`
	Finalized        int     `json:"finalized"`
	BytesUploaded    int64   `json:"bytes_uploaded"`
	FinalizeSeconds  float64 `json:"finalize_seconds"`
	HotFilesDeleted  int     `json:"hot_files_deleted"`
	ObjectsDeleted   int     `json:"objects_deleted"`
	LogStartAdvanced int     `json:"log_start_advanced"`
	Skipped          int     `json:"skipped,omitempty"` // named partitions of deleted topics
}

// compactorEvent is the union of the payloads the compactor accepts: an
// EventBridge event (scheduled: source "aws.events", detail-type
// "Scheduled Event") or a RolledEvent.
type compactorEvent struct {
	Source     string            `json:"source"`
	DetailType string            `json:"detail-type"`
	Event      string            `json:"tierlog_event"`
	Partitions []RolledPartition `json:"partitions"`
}

// deadlineMargin is kept free before the invocation's deadline, so the
// pass stops cleanly and the answer and metrics still go out.
const deadlineMargin = 2 * time.Second

// CompactorHandler is the compactor function's Lambda handler.
type CompactorHandler func(context.Context, json.RawMessage) (CompactorResult, error)

// Compactor returns the compactor function's handler. A "segment rolled"
// event makes one pass over each partition it names (a partition of a
// deleted or re-created topic is skipped); the EventBridge schedule, and
// any payload not recognised, make a full pass over every partition. A
// failing partition does not stop the others; the errors are returned
// joined, so Lambda counts the invocation as failed (and retries an
// asynchronous one; every step is idempotent).
func (f *Function) Compactor() CompactorHandler {
	return func(ctx context.Context, payload json.RawMessage) (CompactorResult, error) {
		var res CompactorResult
		err := f.invoke(ctx, func(ctx context.Context, inv *invocation) error {
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) > 2*deadlineMargin {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, dl.Add(-deadlineMargin))
				defer cancel()
			}
			var ev compactorEvent
			jerr := json.Unmarshal(payload, &ev)
			var st compactor.Stats
			var err error
			switch {
			case jerr == nil && ev.Event == EventSegmentRolled && len(ev.Partitions) > 0:
				res.Mode = ModeRolled
				st, res.Skipped, err = f.compactRolled(ctx, ev.Partitions)
			case jerr == nil && ev.Source == "aws.events":
				res.Mode = ModeScheduled
				st, err = f.srv.Compactor.Run(ctx)
			default:
				res.Mode = ModeFallback
				f.log.WarnContext(ctx, "compactor: payload not recognised; full pass",
					"payload", truncate(string(payload), 256))
				st, err = f.srv.Compactor.Run(ctx)
			}
			res.Partitions, res.Finalized, res.BytesUploaded = st.Partitions, st.Finalized, st.BytesUploaded
			res.FinalizeSeconds, res.HotFilesDeleted = st.FinalizeSeconds, st.HotFilesDeleted
			res.ObjectsDeleted, res.LogStartAdvanced = st.ObjectsDeleted, st.LogStartAdvanced
			inv.properties["mode"] = res.Mode
			inv.metrics = snapshot{
				"CompactedPartitions": {float64(st.Partitions), unitCount},
				"HotFilesDeleted":     {float64(st.HotFilesDeleted), unitCount},
				"ObjectsDeleted":      {float64(st.ObjectsDeleted), unitCount},
			}
			annotate(ctx, map[string]any{"mode": res.Mode, "finalized": st.Finalized})
			if st.Finalized > 0 || st.LogStartAdvanced > 0 || st.HotFilesDeleted > 0 || st.ObjectsDeleted > 0 || err != nil {
				f.log.InfoContext(ctx, "compactor pass", "mode", res.Mode, "partitions", st.Partitions,
					"finalized", st.Finalized, "bytes", st.BytesUploaded, "log_start_advanced", st.LogStartAdvanced,
					"hot_deleted", st.HotFilesDeleted, "objects_deleted", st.ObjectsDeleted, "err", errString(err))
			}
			return err
		})
		return res, err
	}
}

// compactRolled makes one pass over each named partition.
func (f *Function) compactRolled(ctx context.Context, parts []RolledPartition) (compactor.Stats, int, error) {
	var total compactor.Stats
	var errs []error
	skipped := 0
	topics := map[string]meta.TopicConfig{}
	for _, rp := range parts {
		t, ok := topics[rp.Topic]
		if !ok {
			var err error
			t, err = f.srv.Meta.Topic(ctx, rp.Topic)
			if errors.Is(err, meta.ErrNotFound) {
				skipped++
				continue
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("compactor: topic %q: %w", rp.Topic, err))
				continue
			}
			topics[rp.Topic] = t
		}
		if (rp.TopicID != "" && rp.TopicID != t.ID) || rp.Partition < 0 || rp.Partition >= t.Partitions {
			skipped++ // deleted and re-created, or not ours
			continue
		}
		st, err := f.srv.Compactor.Partition(ctx, t, rp.Partition)
		total.Partitions += st.Partitions
		total.Finalized += st.Finalized
		total.BytesUploaded += st.BytesUploaded
		total.FinalizeSeconds += st.FinalizeSeconds
		total.HotFilesDeleted += st.HotFilesDeleted
		total.ObjectsDeleted += st.ObjectsDeleted
		total.LogStartAdvanced += st.LogStartAdvanced
		if err != nil {
			errs = append(errs, fmt.Errorf("compactor: %s/%d: %w", t.Name, rp.Partition, err))
		}
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
	}
	return total, skipped, errors.Join(errs...)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
