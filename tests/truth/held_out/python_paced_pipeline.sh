#!/bin/bash
# expect: busy
# needs: python3 gzip
# packages: python3 gzip (Debian)
# proof: export.log ^exported [0-9]+ pages
# why: a `python3 -c` export step running a pipeline `producer | gzip` with subprocess, the producer fetching one page of records every 4 s (time.sleep between pages, paced to respect an API's rate limit) for the work time: the job waits on its paced child
. "$TRUTH_TOOLS/lib.sh"
cat > "$TRUTH_DIR/producer.py" <<'PY'
import json, os, sys, time
end = time.monotonic() + float(os.environ["TRUTH_WORK"])
page = 0
while True:
    page += 1
    for i in range(200):
        sys.stdout.write(json.dumps({"page": page, "row": i, "name": "record-%d-%d" % (page, i)}) + "\n")
    sys.stdout.flush()
    left = end - time.monotonic()
    if left <= 0.5:
        break
    time.sleep(min(4, left))  # the API allows one page every 4 s
print("exported %d pages" % page, file=sys.stderr)
PY
work_started
python3 -c "
import subprocess, sys
subprocess.run('python3 producer.py | gzip -c > export.jsonl.gz', shell=True, check=True, cwd=sys.argv[1])
" "$TRUTH_DIR" > "$TRUTH_DIR/export.log" 2>&1 < /dev/null
work_done; stay
