package mcp_test
import ("testing";"fmt")
func TestZZ(t *testing.T){
 e:=newPaidEnv(t,paidOptions{})
 r:=e.callTool(t,modern,"risk_levels",e.exampleArgs(t,"risk_levels"),nil)
 fmt.Println(string(mustJSON(t,r)))
 r=e.callTool(t,extension,"risk_levels",e.exampleArgs(t,"risk_levels"),nil)
 fmt.Println(string(mustJSON(t,r)))
 pr:=offerOf(t,r)
 p:=e.sign(t,pr)
 r=e.callTool(t,extension,"risk_levels",e.exampleArgs(t,"risk_levels"),map[string]any{"x402/payment":asBase64(t,p)})
 fmt.Println(string(mustJSON(t,r)))
 r=e.callTool(t,legacy,"xau_quote",map[string]any{"symbol":"EURUSD"},nil)
 p=e.sign(t,offerOf(t,r))
 r=e.callTool(t,legacy,"xau_quote",map[string]any{"symbol":"EURUSD"},map[string]any{"x402/payment":asObject(t,p)})
 fmt.Println(string(mustJSON(t,r)))
 r=e.callTool(t,legacy,"risk_levels",map[string]any{"entry":-5},nil)
 fmt.Println(string(mustJSON(t,r)))
}
