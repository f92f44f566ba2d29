-- wrk script: POST a Workload with generateName (each request creates a new object).
-- Usage: PYKUEUE_TOKEN=$(cat DATA_DIR/token) wrk -t1 -c32 -d10s -s bench/wrk/workload-create.lua \
--          https://127.0.0.1:PORT/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads
-- (wrk does not verify the server's certificate; with `serve --insecure-loopback`, http:// and no token)
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local token = os.getenv("PYKUEUE_TOKEN")
if token and token ~= "" then
  wrk.headers["Authorization"] = "Bearer " .. token
end
wrk.body = [[{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"Workload","metadata":{"generateName":"wl-","namespace":"default"},"spec":{"queueName":"lq","podSets":[{"name":"main","count":1,"template":{"spec":{"containers":[{"name":"c","image":"x","resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}}}]}}]]
