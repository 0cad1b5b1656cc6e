#!/bin/bash
set -e
cd /app
# step
cat README.md requirements*.txt && ls wheels && cat src/throttle/bucket.py src/throttle/limiter.py
# step
python3 -m pip install -r requirements.txt
# wrong: python3 -m pip install -r requirements-legacy.txt
# trap: python3 -m pip install -r requirements-legacy.txt
# trap names: test_half_a_second_brings_half_the_rate
# step
python3 - <<'PY'
from pathlib import Path

path = Path("src/throttle/bucket.py")
text = path.read_text()
old = """        now = self.clock.now()
        elapsed = int(now - self.updated)
        if elapsed > 0:
            self.tokens = min(self.capacity, self.tokens + elapsed * self.rate)
            self.updated = now
"""
new = """        # Tokens accrue continuously: half a second brings half a second's worth.
        now = self.clock.now()
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
"""
assert text.count(old) == 1, f"{path}: _refill is not as expected"
path.write_text(text.replace(old, new))
PY
# wrong: sed -i 's/elapsed = int(now - self.updated)/elapsed = round(now - self.updated)/' src/throttle/bucket.py
# wrong: sed -i -e 's/elapsed = int(now - self.updated)/elapsed = now - self.updated/' -e 's/self.tokens = min(self.capacity, self.tokens + elapsed \* self.rate)/self.tokens += elapsed * self.rate/' src/throttle/bucket.py
# step
python3 - <<'PY'
from pathlib import Path

path = Path("src/throttle/limiter.py")
text = path.read_text()
old = "        bucket = self.bucket(key)\n"
new = """        if n > self.capacity:
            raise ValueError(f"{n} tokens can never be free at once: the capacity is {self.capacity}")
        bucket = self.bucket(key)
"""
assert text.count(old) == 1, f"{path}: acquire is not as expected"
path.write_text(text.replace(old, new))
PY
# wrong: sed -i 's/^                raise RateLimitTimeout(/                if n > self.capacity:\n                    raise ValueError(f"{n} tokens: more than the capacity, {self.capacity}")\n&/' src/throttle/limiter.py
# wrong: sed -i 's/^        bucket = self.bucket(key)$/        if n > self.capacity:\n            raise RateLimitTimeout(f"{key}: {n} tokens, more than the capacity ({self.capacity})")\n&/' src/throttle/limiter.py
# step
python3 -m pytest -q
