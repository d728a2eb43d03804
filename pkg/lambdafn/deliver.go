package lambdafn

import (
	"context"
	"encoding/json"
	"time"

	"github.com/tierlog/tierlog/pkg/subscribe"
)

// EventRecordsCommitted is the RolledEvent.Event produce sends the delivery
// function after records were committed: {"tierlog_event":"records_committed"}.
// Never change it: a delivery function of another version may read it.
const EventRecordsCommitted = "records_committed"

// DeliverWakeInterval is the debounce of produce's wake-ups of the
// delivery function: at most one asynchronous invoke per container in this
// interval. A pass delivers everything committed before it ends, and the
// schedule catches what a skipped wake-up leaves.
const DeliverWakeInterval = time.Second

// wakeDeliverer sends the delivery function one asynchronous invoke unless
// one went out within DeliverWakeInterval. Before the answer, bounded by
// the notify timeout; a failure is logged, never returned.
func (f *Function) wakeDeliverer(ctx context.Context, inv *invocation) {
	now := time.Now().UnixNano()
	last := f.lastWake.Load()
	if now-last < int64(DeliverWakeInterval) || !f.lastWake.CompareAndSwap(last, now) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.env.NotifyTimeout)
	defer cancel()
	if err := f.waker.Notify(ctx, RolledEvent{Event: EventRecordsCommitted}); err != nil {
		f.log.WarnContext(ctx, "wake delivery function", "err", err)
		return
	}
	inv.metrics = addCount(inv.metrics, "DeliverWakeups")
}

// DeliverResult is the delivery function's answer.
type DeliverResult struct {
	Trigger string `json:"trigger"` // "records_committed", "scheduled" or "other"
	subscribe.DrainStats
}

// DeliverHandler is the delivery function's Lambda handler.
type DeliverHandler func(context.Context, json.RawMessage) (DeliverResult, error)

// Deliver returns the delivery function's handler: whatever woke it (a
// produce's wake-up, the schedule, a direct invoke), one pass delivering
// every enabled subscription until each partition is caught up or the
// invocation's deadline nears, then the leases are released and it
// returns: nothing runs while topics are idle.
func (f *Function) Deliver() DeliverHandler {
	return func(ctx context.Context, payload json.RawMessage) (DeliverResult, error) {
		var res DeliverResult
		err := f.invoke(ctx, func(ctx context.Context, inv *invocation) error {
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) > 2*deadlineMargin {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, dl.Add(-deadlineMargin))
				defer cancel()
			}
			var ev compactorEvent
			_ = json.Unmarshal(payload, &ev)
			switch {
			case ev.Event == EventRecordsCommitted:
				res.Trigger = EventRecordsCommitted
			case ev.Source == "aws.events":
				res.Trigger = ModeScheduled
			default:
				res.Trigger = "other"
			}
			svc := f.srv.Subscriptions
			if svc == nil {
				return nil
			}
			st, err := svc.Drain(ctx)
			if err != nil && ctx.Err() != nil {
				err = nil // the deadline: the next wake-up or the schedule goes on
			}
			res.DrainStats = st
			inv.properties["trigger"] = res.Trigger
			inv.metrics = snapshot{
				"DeliveredRecords":     {float64(st.Delivered), unitCount},
				"DeliveredPartitions":  {float64(st.Partitions), unitCount},
				"UnfinishedPartitions": {float64(st.Unfinished), unitCount},
			}
			if st.Delivered > 0 || st.Unfinished > 0 || err != nil {
				f.log.InfoContext(ctx, "delivery pass", "trigger", res.Trigger, "partitions", st.Partitions,
					"busy", st.Busy, "delivered", st.Delivered, "unfinished", st.Unfinished, "err", errString(err))
			}
			return err
		})
		return res, err
	}
}
