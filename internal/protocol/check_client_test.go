package protocol

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A CHECK_CLIENT_CONFIG body as a Java client writes it (CheckClientRequestBody: clientId,
// group, subscriptionData, with Java's numeric codeSet and extra fields) decodes, and ours
// encodes under the same keys.
func TestCheckClientRequestBody(t *testing.T) {
	java := `{"clientId":"10.0.0.1@42","group":"g","subscriptionData":{"classFilterMode":false,"codeSet":[],` +
		`"expressionType":"SQL92","subString":"a > 1","subVersion":1700000000000,"tagsSet":[],"topic":"T","filterClassSource":null}}`
	got, err := DecodeCheckClientRequestBody([]byte(java))
	if err != nil {
		t.Fatal(err)
	}
	want := &CheckClientRequestBody{ClientID: "10.0.0.1@42", Group: "g", SubscriptionData: SubscriptionData{
		Topic: "T", SubString: "a > 1", TagsSet: []string{}, CodeSet: TagCodes{}, SubVersion: 1700000000000,
		ExpressionType: ExpressionSQL92}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
	const ours = `{"clientId":"10.0.0.1@42","group":"g","subscriptionData":{"classFilterMode":false,"topic":"T",` +
		`"subString":"a > 1","tagsSet":[],"codeSet":[],"subVersion":1700000000000,"expressionType":"SQL92"}}`
	if enc := string(want.Encode()); enc != ours {
		t.Errorf("encoded\n %s\nwant\n %s", enc, ours)
	}
	if _, err := DecodeCheckClientRequestBody([]byte(`{`)); err == nil {
		t.Error("truncated body decoded")
	}
}
