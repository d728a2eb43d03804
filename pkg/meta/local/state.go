package local

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/tierlog/tierlog/pkg/meta"
)

// state is the whole metadata set. It holds only durable values: an entry
// is applied after its frame is fsynced. Values are never shared with
// callers: everything going in or out is cloned.
type state struct {
	topics map[string]meta.TopicConfig
	parts  map[meta.PartitionKey]meta.Partition
	groups map[string]map[string]map[int]meta.GroupOffset    // group -> topic -> partition
	segs   map[meta.PartitionKey]map[int64]meta.CatalogEntry // by NextOffset
	gstate map[string]meta.GroupState                        // group state items
	subs   map[string]meta.SubscriptionItem                  // subscriptions.go
	dlvs   map[string]map[int]meta.DeliveryItem              // subscription -> partition
	tokens map[string]meta.Token                             // access tokens by id
}

func newState() state {
	return state{
		topics: map[string]meta.TopicConfig{},
		parts:  map[meta.PartitionKey]meta.Partition{},
		groups: map[string]map[string]map[int]meta.GroupOffset{},
		segs:   map[meta.PartitionKey]map[int64]meta.CatalogEntry{},
		gstate: map[string]meta.GroupState{},
		subs:   map[string]meta.SubscriptionItem{},
		dlvs:   map[string]map[int]meta.DeliveryItem{},
		tokens: map[string]meta.Token{},
	}
}

// apply performs e, which is already durable (or being replayed).
func (st *state) apply(e *entry) error {
	switch e.Op {
	case opPutTopic:
		st.topics[e.Topic.Name] = *e.Topic
	case opDelTopic:
		delete(st.topics, e.Name)
	case opPutPart:
		p := clonePartition(*e.Part)
		st.parts[keyOf(p)] = p
	case opDelPart:
		delete(st.parts, meta.PartitionKey(*e.Key))
	case opPutOffsets:
		for _, o := range e.Offsets {
			topics := st.groups[e.Group]
			if topics == nil {
				topics = map[string]map[int]meta.GroupOffset{}
				st.groups[e.Group] = topics
			}
			parts := topics[o.Topic]
			if parts == nil {
				parts = map[int]meta.GroupOffset{}
				topics[o.Topic] = parts
			}
			if cur, ok := parts[o.Partition]; ok && !o.Replaces(cur) {
				continue
			}
			parts[o.Partition] = o
		}
	case opPutGroup:
		st.gstate[e.GState.Group] = e.GState.Clone()
	case opDelGroup:
		delete(st.gstate, e.Group)
	case opDelOffsets:
		delete(st.groups[e.Group], e.Name)
	case opPutToken:
		st.tokens[e.Token.ID] = e.Token.Clone()
	case opDelToken:
		delete(st.tokens, e.Name)
	case opPutSeg:
		k := meta.PartitionKey(*e.Key)
		if st.segs[k] == nil {
			st.segs[k] = map[int64]meta.CatalogEntry{}
		}
		st.segs[k][e.Seg.NextOffset] = *e.Seg
	case opDelSeg:
		k := meta.PartitionKey(*e.Key)
		delete(st.segs[k], e.Seg.NextOffset)
		if len(st.segs[k]) == 0 {
			delete(st.segs, k)
		}
	case opPutSub, opDelSub, opPutDlv, opDelDlv:
		st.applySubs(e)
	case opBatch:
		for _, m := range e.Batch {
			if m.Op == opBatch {
				return fmt.Errorf("%w: batch inside a batch", ErrCorrupt)
			}
			if err := st.apply(m); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%w: op %q is not a mutation", ErrCorrupt, e.Op)
	}
	return nil
}

// clone returns a deep copy of st.
func (st *state) clone() state {
	c := newState()
	for _, e := range st.entries() {
		if err := c.apply(e); err != nil {
			panic(err) // entries returns put entries only
		}
	}
	return c
}

// entries returns the state as put entries in a stable order: topics by
// name, partitions by key, offsets by group and topic.
func (st *state) entries() []*entry {
	var out []*entry
	for _, name := range sortedKeys(st.topics) {
		t := st.topics[name]
		out = append(out, &entry{Op: opPutTopic, Topic: &t})
	}
	keys := make([]meta.PartitionKey, 0, len(st.parts))
	for k := range st.parts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	for _, k := range keys {
		p := st.parts[k]
		out = append(out, &entry{Op: opPutPart, Part: &p})
	}
	segKeys := make([]meta.PartitionKey, 0, len(st.segs))
	for k := range st.segs {
		segKeys = append(segKeys, k)
	}
	slices.SortFunc(segKeys, compareKeys)
	for _, k := range segKeys {
		pk := partKey(k)
		for _, end := range slices.Sorted(maps.Keys(st.segs[k])) {
			e := st.segs[k][end]
			out = append(out, &entry{Op: opPutSeg, Key: &pk, Seg: &e})
		}
	}
	for _, g := range sortedKeys(st.groups) {
		for _, topic := range sortedKeys(st.groups[g]) {
			out = append(out, &entry{Op: opPutOffsets, Group: g, Offsets: sortedOffsets(st.groups[g][topic])})
		}
	}
	for _, g := range sortedKeys(st.gstate) {
		gs := st.gstate[g].Clone()
		out = append(out, &entry{Op: opPutGroup, GState: &gs})
	}
	for _, id := range sortedKeys(st.tokens) {
		tok := st.tokens[id].Clone()
		out = append(out, &entry{Op: opPutToken, Token: &tok})
	}
	return append(out, st.subEntries()...)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func sortedOffsets(m map[int]meta.GroupOffset) []meta.GroupOffset {
	out := make([]meta.GroupOffset, 0, len(m))
	for _, o := range m {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b meta.GroupOffset) int { return cmp.Compare(a.Partition, b.Partition) })
	return out
}

func compareKeys(a, b meta.PartitionKey) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.TopicID, b.TopicID), cmp.Compare(a.Partition, b.Partition))
}

func keyOf(p meta.Partition) meta.PartitionKey {
	return meta.PartitionKey{Topic: p.Topic, TopicID: p.TopicID, Partition: p.Partition}
}

// zeroPartition is the item of a partition nobody has written yet.
func zeroPartition(k meta.PartitionKey) meta.Partition {
	return meta.Partition{Topic: k.Topic, TopicID: k.TopicID, Partition: k.Partition, LastTS: -1}
}

// clonePartition deep-copies p. An empty Sealed becomes nil, as it reads
// back from JSON.
func clonePartition(p meta.Partition) meta.Partition {
	if p.Active != nil {
		a := *p.Active
		p.Active = &a
	}
	if len(p.Sealed) == 0 {
		p.Sealed = nil
	} else {
		p.Sealed = slices.Clone(p.Sealed)
	}
	return p
}
