package dynamo

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tierlog/tierlog/pkg/meta"
)

// An access token item is pk "tokens", sk the escaped token id, with the
// attribute token (S): the meta.Token as JSON (its secret's hash, never
// the secret). Tokens are written once and deleted to revoke them.
const (
	pkTokens  = "tokens"
	attrToken = "token"
)

var _ meta.TokenStore = (*Store)(nil)

func tokenKey(id string) map[string]types.AttributeValue {
	return key(pkTokens, esc(id))
}

func decodeToken(item map[string]types.AttributeValue) (meta.Token, error) {
	var t meta.Token
	av, ok := item[attrToken].(*types.AttributeValueMemberS)
	if !ok {
		return t, fmt.Errorf("dynamo: decode token: %s is %T, want S", attrToken, item[attrToken])
	}
	if err := json.Unmarshal([]byte(av.Value), &t); err != nil {
		return t, fmt.Errorf("dynamo: decode token: %w", err)
	}
	return t, nil
}

// PutToken implements meta.TokenStore: one PutItem IF attribute_not_exists.
func (s *Store) PutToken(ctx context.Context, t meta.Token) error {
	body, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("dynamo: encode token %q: %w", t.ID, err)
	}
	item := tokenKey(t.ID)
	item[attrToken] = str(string(body))
	res, err := s.call(ctx, opPutItem, true, func(ctx context.Context, o ...func(*dynamodb.Options)) error {
		_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                s.table,
			Item:                     item,
			ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": attrPK},
		}, o...)
		return err
	})
	if !isCondition(err) {
		return err
	}
	if res.ambiguous {
		// Our own earlier attempt may be what is there now.
		if cur, gerr := s.Token(ctx, t.ID); gerr == nil && cur.Hash == t.Hash && cur.CreatedMs == t.CreatedMs {
			return nil
		}
	}
	return fmt.Errorf("%w: %q", meta.ErrTokenExists, t.ID)
}

// Token implements meta.TokenStore: one consistent GetItem.
func (s *Store) Token(ctx context.Context, id string) (meta.Token, error) {
	item, err := s.getItem(ctx, tokenKey(id))
	if err != nil {
		return meta.Token{}, err
	}
	if item == nil {
		return meta.Token{}, fmt.Errorf("%w: token %q", meta.ErrNotFound, id)
	}
	return decodeToken(item)
}

// Tokens implements meta.TokenStore: one Query on pk "tokens" (paged).
func (s *Store) Tokens(ctx context.Context) ([]meta.Token, error) {
	items, err := s.query(ctx, pkTokens, nil, 0)
	if err != nil {
		return nil, err
	}
	out, err := decodeEach(items, decodeToken)
	if err != nil {
		return nil, err
	}
	// The sort key orders plain ids; escaped ones may not.
	slices.SortFunc(out, func(a, b meta.Token) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// DeleteToken implements meta.TokenStore: one DeleteItem IF attribute_exists.
func (s *Store) DeleteToken(ctx context.Context, id string) error {
	res, err := s.call(ctx, opDeleteItem, true, func(ctx context.Context, o ...func(*dynamodb.Options)) error {
		_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName:                s.table,
			Key:                      tokenKey(id),
			ConditionExpression:      aws.String("attribute_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": attrPK},
		}, o...)
		return err
	})
	if !isCondition(err) {
		return err
	}
	if res.ambiguous {
		return nil // gone: our earlier attempt, or someone's
	}
	return fmt.Errorf("%w: token %q", meta.ErrNotFound, id)
}
