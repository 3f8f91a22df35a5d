package sql92

import "testing"

// benchMessage is a typical message's ten properties: system ones and a few user ones.
var benchMessage = props{
	"TAGS": "TagB", "KEYS": "order-1842", "UNIQ_KEY": "7F000001000118B4AAC2", "WAIT": "true",
	"region": "eu-west", "amount": "1250", "price": "19.99", "tier": "gold", "retries": "0",
	"source": "checkout",
}

func BenchmarkMatch(b *testing.B) {
	e, err := Compile("amount > 1000 AND price <= 25.5 AND TAGS IN ('TagA', 'TagB', 'TagC')")
	if err != nil {
		b.Fatal(err)
	}
	prop := benchMessage.get
	b.ReportAllocs()
	for b.Loop() {
		if !e.Match(prop) {
			b.Fatal("benchmark message does not match")
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	const src = "amount > 1000 AND price <= 25.5 AND TAGS IN ('TagA', 'TagB', 'TagC')"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(src); err != nil {
			b.Fatal(err)
		}
	}
}
