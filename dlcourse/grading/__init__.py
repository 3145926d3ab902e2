"""Grading across a process boundary: the trusted grader drives the student's kernel as a client.

The grader (outside the sandbox) holds the oracles, the hidden inputs and the tolerances. It asks the
student's kernel to call the student's functions on inputs it sends and receives plain data back — tensors
as safetensors bytes, numbers, strings and containers as JSON — never an object it would execute. Every
comparison then runs in the grader's own clean interpreter.

* :mod:`dlcourse.grading.wire` — the data format and the framing over a socket;
* :mod:`dlcourse.grading.channel` — a request/reply channel that both sides serve, with object handles;
* :mod:`dlcourse.grading.agent` — the kernel side: looks up the student's names and calls them;
* :mod:`dlcourse.grading.remote` — the grader side: proxies for the student's objects, guards that travel
  with each call.
* :mod:`dlcourse.grading.zygote` — the fork server in the sandbox that each submission's kernel is forked
  from, isolated again before it runs.

Students have this package too; nothing in it is secret. What decides a grade lives in ``autograder/``.
"""
