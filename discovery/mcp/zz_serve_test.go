package mcp_test
import ("testing";"fmt";"os";"time")
func TestZZServe(t *testing.T){
 if os.Getenv("ZZ_SERVE")=="" {t.Skip()}
 e:=newPaidEnv(t,paidOptions{})
 os.WriteFile("/tmp/zz_url", []byte(e.url), 0o644)
 fmt.Println(e.url)
 time.Sleep(20*time.Minute)
}
