package dynamo

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestDbg(t *testing.T) {
	srv := startMinidyn(t)
	c := testClient(srv.URL)
	s := newTableStore(t, c)
	_, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: s.table, Item: map[string]types.AttributeValue{
		"pk": str("a"), "sk": str("b"), "l": &types.AttributeValueMemberL{Value: []types.AttributeValue{}}, "n": &types.AttributeValueMemberNULL{Value: true}, "e": str(""),
	}})
	fmt.Println(err)
	out, err := c.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: s.table, Key: key("a", "b"), ConsistentRead: aws.Bool(true)})
	fmt.Println(err)
	for k, v := range out.Item {
		fmt.Printf("%s: %#v\n", k, v)
	}
}
