package node

import (
	"crypto/tls"
	"reflect"
	"testing"
	"time"
)

// nodeOnlyFields are the settings the node uses itself (listeners, roles of the process,
// start-up) instead of handing them to a part, and those whose effect the zero-versus-set
// comparison below cannot see (the broker address is derived from the bound listener).
var nodeOnlyFields = map[string]bool{
	"Listen": true, "NameServerListen": true, "BrokerListen": true, "DisableNameServer": true,
	"DisableBroker": true, "NameServers": true, "StartTimeout": true, "ServerWorkerThreads": true,
	"ServerQueueCapacity": true, "BrokerIP": true, "Logger": true,
	// Controller mode's periods and priority drive the replicas manager (internal/broker/ha/replicas.go).
	"ControllerHeartbeatInterval": true, "SyncBrokerMetadataPeriod": true, "CheckSyncStateSetPeriod": true,
	"HAMaxTimeSlaveNotCatchup": true, "ElectionPriority": true,
	// ACL guards every listener's dispatcher, and the broker's own transport signs and dials
	// TLS (node.go): no part sees them.
	"ACL": true, "ACLFile": true, "ACLWatchInterval": true, "Credentials": true, "TLSClientEnable": true, "TLSClientConfig": true,
	// The optional parts' implementations: the node starts them itself (controller.go, http.go),
	// and embed_test.go and the controller tests check that they run.
	"Controller": true, "Metrics": true,
}

// Every node setting reaches a part: setting any one field changes what parts.go derives. A
// field added to Options and forgotten in parts.go fails here, not in a user's deployment.
func TestEveryOptionReachesAPart(t *testing.T) {
	derive := func(o Options) []any {
		bo, err := o.brokerOptions("127.0.0.1:10911", nil, nil)
		if err != nil {
			t.Fatalf("brokerOptions: %v", err)
		}
		co := o.controllerOptions("127.0.0.1:9876")
		co.Logger = nil
		return []any{o.nameServerOptions(), o.serverOptions("127.0.0.1:9876"), bo, co, o.httpOptions()}
	}
	base := derive(Options{Listen: "127.0.0.1:9876"})
	typ := reflect.TypeOf(Options{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		if nodeOnlyFields[f.Name] {
			continue
		}
		o := Options{Listen: "127.0.0.1:9876"}
		v := reflect.ValueOf(&o).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString("127.0.0.1:1")
			if f.Name == "FlushDiskType" {
				v.SetString("SYNC_FLUSH")
			}
			if f.Name == "BrokerRole" {
				v.SetString("SYNC_MASTER")
			}
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int, reflect.Int32, reflect.Int64:
			if v.Type() == reflect.TypeOf(time.Duration(0)) {
				v.SetInt(int64(7 * time.Millisecond))
			} else {
				v.SetInt(7)
			}
		case reflect.Slice:
			if v.Type().Elem().Kind() == reflect.String {
				v.Set(reflect.ValueOf([]string{"127.0.0.1:1"}))
			} else {
				v.Set(reflect.ValueOf([]time.Duration{time.Second}))
			}
		case reflect.Map:
			v.Set(reflect.ValueOf(map[string]string{"n0": "127.0.0.1:1"}))
		case reflect.Pointer:
			if v.Type() != reflect.TypeOf((*tls.Config)(nil)) {
				t.Fatalf("field %s of type %v: teach this test how to set it", f.Name, v.Type())
			}
			v.Set(reflect.ValueOf(&tls.Config{ServerName: "x"}))
		default:
			t.Fatalf("field %s of kind %v: teach this test how to set it", f.Name, v.Kind())
		}
		if reflect.DeepEqual(base, derive(o)) {
			t.Errorf("Options.%s reaches no part: parts.go drops it", f.Name)
		}
	}
}
