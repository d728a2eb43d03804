package dynamo

import (
	"testing"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/metatest"
)

func subStoreFactory(endpoint func(t *testing.T) string) func(t *testing.T) meta.SubscriptionStore {
	return func(t *testing.T) meta.SubscriptionStore { return newTableStore(t, testClient(endpoint(t))) }
}

func TestSubscriptionConformanceMinidyn(t *testing.T) {
	srv := startMinidyn(t)
	metatest.RunSubscriptions(t, subStoreFactory(func(*testing.T) string { return srv.URL }))
}

func TestSubscriptionConformanceDynalite(t *testing.T) {
	metatest.RunSubscriptions(t, subStoreFactory(dynaliteEndpoint))
}
