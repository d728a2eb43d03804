package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/tierlog/tierlog/pkg/auth"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/subscribe"
)

// Error codes of the subscription routes (docs/api.md "Subscriptions").
// Never change them: clients switch on them.
const (
	codeSubscriptionNotFound = "subscription_not_found"
	codeSubscriptionExists   = "subscription_exists"
)

// WithSubscriptions serves the subscription routes over svc. Without it
// they answer 404 not_found.
func WithSubscriptions(svc *subscribe.Service) Option {
	return func(c *config) { c.subs = svc }
}

// subscriptionJSON is a subscription as answered: as stored, plus its
// status on GET /v1/subscriptions/{name}.
type subscriptionJSON struct {
	subscribe.Subscription
	Status *subscribe.Status `json:"status,omitempty"`
}

// patchSubscriptionRequest is a PATCH body: the fields that may change,
// and those that may not (named in the answer rather than as unknown).
type patchSubscriptionRequest struct {
	subscribe.Patch
	Name                  json.RawMessage `json:"name"`
	Topic                 json.RawMessage `json:"topic"`
	Target                json.RawMessage `json:"target"`
	Start                 json.RawMessage `json:"start"`
	ParallelizationFactor json.RawMessage `json:"parallelization_factor"`
}

// conflictRetries bounds the re-reads of a subscription changed by
// someone else between a handler's read and its write.
const conflictRetries = 5

func (s *server) subscriptions() (*subscribe.Service, error) {
	if s.subs == nil {
		return nil, &apiError{status: http.StatusNotFound, code: codeNotFound, msg: "subscriptions are not served here"}
	}
	return s.subs, nil
}

// touch checks every topic a subscription request touches before anything
// changes: each is a valid name, r's token grants admin on it and on the
// subscription's group (named after it), and each exists when mustExist.
func (s *server) touch(r *http.Request, svc *subscribe.Service, name string, topics []string, mustExist bool) error {
	for _, t := range topics {
		if err := checkTopic(t); err != nil {
			return err
		}
	}
	if err := s.authorize(r, auth.Admin, topics, []string{name}); err != nil {
		return err
	}
	if !mustExist {
		return nil
	}
	return svc.CheckTopics(r.Context(), topics)
}

// mayName checks, before a subscription is read, that r's token grants
// admin on the group named after it.
func (s *server) mayName(r *http.Request, name string) error {
	return s.authorize(r, auth.Admin, nil, []string{name})
}

// POST /v1/subscriptions
func (s *server) createSubscription(w http.ResponseWriter, r *http.Request) error {
	svc, err := s.subscriptions()
	if err != nil {
		return err
	}
	var spec subscribe.Spec
	if err := readJSON(w, r, &spec); err != nil {
		return err
	}
	sub, err := subscribe.Validate(spec)
	if err != nil {
		return err
	}
	if err := s.touch(r, svc, sub.Name, sub.Topics(), true); err != nil {
		return err
	}
	if sub, err = svc.Create(r.Context(), spec); err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusCreated, subscriptionJSON{Subscription: sub})
	return nil
}

// GET /v1/subscriptions
func (s *server) listSubscriptions(w http.ResponseWriter, r *http.Request) error {
	svc, err := s.subscriptions()
	if err != nil {
		return err
	}
	subs, err := svc.List(r.Context())
	if err != nil {
		return err
	}
	shown := make([]subscribe.Subscription, 0, len(subs)) // those r's token covers
	for _, sub := range subs {
		if s.touch(r, svc, sub.Name, sub.Topics(), false) == nil {
			shown = append(shown, sub)
		}
	}
	s.writeJSON(w, r, http.StatusOK, struct {
		Subscriptions []subscribe.Subscription `json:"subscriptions"`
	}{shown})
	return nil
}

// GET /v1/subscriptions/{name}
func (s *server) getSubscription(w http.ResponseWriter, r *http.Request) error {
	svc, err := s.subscriptions()
	if err != nil {
		return err
	}
	if err := s.mayName(r, r.PathValue("name")); err != nil {
		return err
	}
	sub, _, err := svc.Get(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	if err := s.touch(r, svc, sub.Name, sub.Topics(), false); err != nil {
		return err
	}
	st, err := svc.Describe(r.Context(), sub)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, subscriptionJSON{Subscription: sub, Status: &st})
	return nil
}

// PATCH /v1/subscriptions/{name}
func (s *server) patchSubscription(w http.ResponseWriter, r *http.Request) error {
	svc, err := s.subscriptions()
	if err != nil {
		return err
	}
	var req patchSubscriptionRequest
	if err := readJSON(w, r, &req); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"name", req.Name}, {"topic", req.Topic}, {"target", req.Target}, {"start", req.Start}, {"parallelization_factor", req.ParallelizationFactor}} {
		if f.raw != nil {
			return badRequest("%s cannot be changed; PATCH takes enabled, batch_size, batch_window_ms, max_batch_bytes, max_retry_attempts, max_record_age_ms, bisect_batch_on_error and on_failure", f.name)
		}
	}
	if err := s.mayName(r, r.PathValue("name")); err != nil {
		return err
	}
	for range conflictRetries {
		sub, version, err := svc.Get(r.Context(), r.PathValue("name"))
		if err != nil {
			return err
		}
		topics := sub.Topics()
		if req.OnFailure != nil && req.OnFailure.Topic != "" {
			topics = append(topics, req.OnFailure.Topic)
		}
		if err := s.touch(r, svc, sub.Name, topics, req.OnFailure != nil && req.OnFailure.Topic != ""); err != nil {
			return err
		}
		next, err := svc.Update(r.Context(), sub, version, req.Patch)
		if errors.Is(err, meta.ErrConflict) {
			continue // changed since read: apply the patch to the new version
		}
		if err != nil {
			return err
		}
		s.writeJSON(w, r, http.StatusOK, subscriptionJSON{Subscription: next})
		return nil
	}
	return fmt.Errorf("%w: subscription %q changed concurrently", meta.ErrUnavailable, r.PathValue("name"))
}

// DELETE /v1/subscriptions/{name}
func (s *server) deleteSubscription(w http.ResponseWriter, r *http.Request) error {
	svc, err := s.subscriptions()
	if err != nil {
		return err
	}
	if err := s.mayName(r, r.PathValue("name")); err != nil {
		return err
	}
	for range conflictRetries {
		sub, version, err := svc.Get(r.Context(), r.PathValue("name"))
		if err != nil {
			return err
		}
		if err := s.touch(r, svc, sub.Name, sub.Topics(), false); err != nil {
			return err
		}
		err = svc.Delete(r.Context(), sub, version)
		if errors.Is(err, meta.ErrConflict) {
			continue
		}
		if err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return fmt.Errorf("%w: subscription %q changed concurrently", meta.ErrUnavailable, r.PathValue("name"))
}
