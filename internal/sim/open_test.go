package sim

import "testing"

// openFaults are the faults TestSimulate leaves out because they trigger a
// known bug that is not fixed yet. Each names the finding; when it is
// fixed, delete its line (the scenario of the same finding then guards it).
var openFaults = []struct {
	name string
	off  func(*Config)
	open string // why it is off
}{
	{
		name: "delayed or duplicated topic delete",
		off:  func(c *Config) { c.Meta.NoTopicDeleteReplay = true },
		open: "a late copy of a topic delete deletes the topic created again under the same name (meta DeleteTopic is by name only): scenario delete-replay-deletes-recreated-topic",
	},
	{
		name: "topic churn (delete and re-create while brokers have the old incarnation cached)",
		off:  func(c *Config) { c.Churn = -1 },
		open: "a broker with a deleted incarnation cached re-creates its deleted partition item (Acquire before Verify); the item is fresh only at epoch 1, so once anything acquired it before (a second stale broker, a duplicated or late Acquire, or the same broker whose Verify read failed) the next Acquire gets epoch 2, skips Verify and acknowledges writes into the deleted incarnation: scenario stale-item-recreated-skips-verify",
	},
}

func applyOpen(cfg *Config) {
	for _, o := range openFaults {
		o.off(cfg)
	}
}

func logOpen(t *testing.T) {
	for _, o := range openFaults {
		t.Logf("open: fault %q is off: %s", o.name, o.open)
	}
}
