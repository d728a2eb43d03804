package server

import (
	"context"
	"errors"

	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/objstore"
)

func openAWS(ctx context.Context, cfg Config) (meta.Store, objstore.Store, func() map[string]int64, error) {
	return nil, nil, nil, errors.New("server: aws backend not wired yet")
}
