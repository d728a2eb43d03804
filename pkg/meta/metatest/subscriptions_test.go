package metatest_test

import (
	"testing"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/mem"
	"github.com/tierlog/tierlog/pkg/meta/metatest"
)

func TestSubscriptionsMem(t *testing.T) {
	metatest.RunSubscriptions(t, func(t *testing.T) meta.SubscriptionStore { return mem.New() })
}
