package sim

import (
	"context"

	"github.com/tierlog/tierlog/pkg/meta"
)

// The group state methods of meta.Store, through the network's faults
// like every other call.

// Group implements meta.Store.
func (c *MetaClient) Group(ctx context.Context, group string) (meta.GroupState, error) {
	if err := c.read("group " + group); err != nil {
		return meta.GroupState{}, err
	}
	return c.n.inner.Group(bg, group)
}

// PutGroup implements meta.Store.
func (c *MetaClient) PutGroup(ctx context.Context, g meta.GroupState) error {
	return c.write(opMetaW, "put group "+g.Group, func() error { return c.n.inner.PutGroup(bg, g) })
}

// DeleteGroup implements meta.Store.
func (c *MetaClient) DeleteGroup(ctx context.Context, group string, version uint64) error {
	return c.write(opMetaW, "delete group "+group, func() error { return c.n.inner.DeleteGroup(bg, group, version) })
}

// Groups implements meta.Store.
func (c *MetaClient) Groups(ctx context.Context) ([]meta.GroupState, error) {
	if err := c.read("groups"); err != nil {
		return nil, err
	}
	return c.n.inner.Groups(bg)
}

// DeleteGroupOffsets implements meta.Store.
func (c *MetaClient) DeleteGroupOffsets(ctx context.Context, group, topic string) error {
	return c.write(opMetaW, "delete offsets "+group+" "+topic, func() error { return c.n.inner.DeleteGroupOffsets(bg, group, topic) })
}

// UpdateTopic implements meta.Store.
func (c *MetaClient) UpdateTopic(ctx context.Context, old, t meta.TopicConfig) error {
	return c.write(opMetaW, "update topic "+t.Name+" "+t.ID, func() error {
		err := c.n.inner.UpdateTopic(bg, old, t)
		if err == nil {
			c.n.w.onTopicUpdated(t)
		}
		return err
	})
}
