//! Tasks (`--tasks`: the tool `research`, which runs only as a task) with the server's binary, in
//! both protocol eras, over stdio and Streamable HTTP.
//!
//! The `initialize` era (2025-11-25) goes through plexus-client's raw requests where it can, and
//! through the raw harnesses where a raw request cannot show what is tested: progress of a task
//! and which HTTP stream a message takes. The stateless era goes through the
//! raw harnesses only, to see the wire as it is: plexus-client's following of tasks is
//! `tests/client_tasks.rs`'s business.

mod common;
mod support;
mod tasks_support;
mod wire;

use std::time::{Duration, Instant};

use plexus_jsonrpc::ErrorCode;
use plexus_testserver::EventLogFile;
use serde_json::{Value, json};
use tasks_support::{
    ERA_A_KEYS, ERA_B_KEYS, EXTENSION, HANG_GUARD, RELATED, assert_task, call, call_b, envelope, era_a, era_b,
    message_of, poll_b, poll_until, post_b, post_message, rpc_error, start, statuses,
};

#[tokio::test]
async fn era_a_a_task_is_created_polled_and_its_result_fetched() {
    let log = EventLogFile::new("tasks-a");
    let (client, _) = era_a(&["--tasks", &log.arg()], None).await;
    assert!(client.server().capabilities.has_tool_call_tasks());
    let tools = call(&client, "tools/list", json!({})).await.unwrap();
    let research = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "research")
        .unwrap();
    assert_eq!(
        (&research["title"], &research["execution"]),
        (&json!("Research"), &json!({"taskSupport": "required"}))
    );
    assert_eq!(research["inputSchema"]["required"], json!(["topic"]));

    let task = start(
        &client,
        json!({"topic": "tides", "stages": 2, "stageMs": 20}),
        json!({"ttl": 60_000}),
    )
    .await;
    let expected = json!({"status": "working", "statusMessage": "starting: tides", "ttl": 60_000, "pollInterval": 100});
    assert_task(&task, ERA_A_KEYS, &expected);
    assert_eq!(task["createdAt"], task["lastUpdatedAt"]);
    let id = task["taskId"].as_str().unwrap();
    assert_eq!(
        log.matching(&json!({"event": "task-created"})),
        [json!({"event": "task-created", "id": id, "tool": "research"})]
    );
    let done = poll_until(&client, id, "completed").await;
    assert_task(
        &done,
        ERA_A_KEYS,
        &json!({"statusMessage": "done: 2 stages", "createdAt": task["createdAt"]}),
    );
    assert_eq!(statuses(&log, id), ["completed"]);

    let result = call(&client, "tasks/result", json!({"taskId": id})).await.unwrap();
    assert_eq!(
        result,
        json!({
            "content": [{"type": "text", "text": "Report on tides: 2 stages"}],
            "structuredContent": {"topic": "tides", "stages": 2, "angle": null},
            "_meta": {RELATED: {"taskId": id}},
        })
    );
    // A second task: the list is newest first; TTLs are bounded to [1 s, 5 min].
    let short = start(&client, json!({"topic": "reefs", "stageMs": 0}), json!({"ttl": 10})).await;
    assert_eq!(short["ttl"], 1000);
    let long = start(&client, json!({"topic": "reefs", "stageMs": 0}), json!({})).await;
    assert_eq!(long["ttl"], 300_000);
    let listed = call(&client, "tasks/list", json!({})).await.unwrap();
    let ids: Vec<&Value> = listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|task| &task["taskId"])
        .collect();
    assert_eq!(ids, [&long["taskId"], &short["taskId"], &task["taskId"]]);

    let error = rpc_error(call(&client, "tasks/cancel", json!({"taskId": id})).await);
    let ended = format!("task {id} has already ended (completed): a finished task cannot be cancelled");
    assert_eq!(
        (error.code, error.message.as_str()),
        (ErrorCode::INVALID_PARAMS, ended.as_str())
    );
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let error = rpc_error(call(&client, method, json!({"taskId": "0123abcd"})).await);
        assert_eq!(
            (error.code, error.message.as_str()),
            (ErrorCode::INVALID_PARAMS, "task 0123abcd not found"),
            "{method}"
        );
    }
    let error = rpc_error(
        call(
            &client,
            "tools/call",
            json!({"name": "research", "arguments": {"topic": "tides"}}),
        )
        .await,
    );
    assert_eq!(
        (error.code, error.message.as_str()),
        (
            ErrorCode::METHOD_NOT_FOUND,
            "research must be called as a task (execution.taskSupport is required)"
        )
    );
    let error = rpc_error(call(&client, "tasks/update", json!({"taskId": id, "inputResponses": {}})).await);
    assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND, "{error:?}");
    client.close().await.unwrap();
}

#[tokio::test]
async fn era_a_the_question_is_asked_during_tasks_result_and_the_answer_feeds_the_task() {
    for (angle, report) in [
        (Some("history"), "Report on tides: 2 stages, angle history"),
        (None, "Report on tides: 2 stages, no angle"),
    ] {
        let log = EventLogFile::new("tasks-ask");
        let (client, handler) = era_a(&["--tasks", &log.arg()], angle).await;
        let task = start(
            &client,
            json!({"topic": "tides", "stages": 2, "stageMs": 20, "ask": true}),
            json!({}),
        )
        .await;
        let id = task["taskId"].as_str().unwrap();
        let waiting = poll_until(&client, id, "input_required").await;
        assert_eq!(waiting["statusMessage"], "waiting for input: Which angle on tides?");
        assert!(handler.asked.lock().unwrap().is_empty(), "asked before tasks/result");

        let result = call(&client, "tasks/result", json!({"taskId": id})).await.unwrap();
        assert_eq!(result["content"][0]["text"], report);
        assert_eq!(
            result["structuredContent"]["angle"],
            angle.map_or(Value::Null, Value::from)
        );
        let asked = handler.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1, "{asked:?}");
        assert_eq!(
            (&asked[0]["message"], &asked[0]["requestedSchema"]),
            (
                &json!("Which angle on tides?"),
                &json!({"type": "object", "properties": {"angle": {"type": "string"}}, "required": ["angle"]})
            )
        );
        assert_eq!(asked[0]["_meta"][RELATED], json!({"taskId": id}));
        assert_eq!(statuses(&log, id), ["input_required", "working", "completed"]);
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn era_a_failure_tool_error_cancellation_and_expiry() {
    let log = EventLogFile::new("tasks-end");
    let (client, _) = era_a(&["--tasks", &log.arg()], None).await;
    let failing = start(
        &client,
        json!({"topic": "tides", "stages": 2, "stageMs": 0, "fail": true}),
        json!({}),
    )
    .await;
    let id = failing["taskId"].as_str().unwrap();
    let failed = poll_until(&client, id, "failed").await;
    assert_eq!(failed["statusMessage"], "failed: research on tides failed at stage 2");
    let error = rpc_error(call(&client, "tasks/result", json!({"taskId": id})).await);
    assert_eq!(
        (error.code, error.message.as_str()),
        (ErrorCode::INTERNAL_ERROR, "research on tides failed at stage 2")
    );

    let erring = start(
        &client,
        json!({"topic": "tides", "stageMs": 0, "toolError": true}),
        json!({}),
    )
    .await;
    let result = call(&client, "tasks/result", json!({"taskId": erring["taskId"]}))
        .await
        .unwrap();
    assert_eq!(
        result,
        json!({"content": [{"type": "text", "text": "research on tides found nothing (toolError)"}], "isError": true, "_meta": {RELATED: {"taskId": erring["taskId"]}}})
    );

    let long = start(
        &client,
        json!({"topic": "tides", "stages": 20, "stageMs": 100}),
        json!({}),
    )
    .await;
    let id = long["taskId"].as_str().unwrap();
    let started = Instant::now();
    while call(&client, "tasks/get", json!({"taskId": id})).await.unwrap()["statusMessage"] != "stage 2/20: tides" {
        assert!(started.elapsed() < HANG_GUARD);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let cancelled = call(&client, "tasks/cancel", json!({"taskId": id})).await.unwrap();
    assert_task(
        &cancelled,
        ERA_A_KEYS,
        &json!({"status": "cancelled", "statusMessage": "cancelled by the client"}),
    );
    assert_eq!(
        log.matching(&json!({"event": "task-cancelled"})),
        [json!({"event": "task-cancelled", "id": id})]
    );
    let error = rpc_error(call(&client, "tasks/result", json!({"taskId": id})).await);
    let message = format!("task {id} was cancelled: it has no result");
    assert_eq!(
        (error.code, error.message.as_str()),
        (ErrorCode::INTERNAL_ERROR, message.as_str())
    );
    // The work stopped: three stages later the task is as the cancellation left it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        call(&client, "tasks/get", json!({"taskId": id})).await.unwrap(),
        cancelled
    );
    assert_eq!(statuses(&log, id), ["cancelled"]);

    let expiring = start(
        &client,
        json!({"topic": "tides", "stages": 20, "stageMs": 100}),
        json!({"ttl": 1000}),
    )
    .await;
    let id = expiring["taskId"].as_str().unwrap();
    let error = loop {
        match call(&client, "tasks/get", json!({"taskId": id})).await {
            Ok(task) => assert_eq!(task["status"], "working"),
            Err(error) => break rpc_error(Err(error)),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let message = format!("task {id} has expired (its ttl of 1000 ms has passed)");
    assert_eq!(
        (error.code, error.message.as_str()),
        (ErrorCode::INVALID_PARAMS, message.as_str())
    );
    assert!(
        call(&client, "tasks/list", json!({})).await.unwrap()["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|task| task["taskId"] != id)
    );
    client.close().await.unwrap();
}

#[test]
fn era_a_progress_and_status_notifications_go_to_the_session_over_stdio() {
    let mut server = common::Server::start(&["--tasks"]);
    server.initialize_with("2025-11-25", json!({}));
    let created = server.result(
        "tools/call",
        json!({"name": "research", "arguments": {"topic": "tides", "stageMs": 10}, "task": {}, "_meta": {"progressToken": "p-1"}}),
    );
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    let mut progress = Vec::new();
    let mut status = Vec::new();
    let mut early = std::mem::take(&mut server.unsolicited).into_iter();
    while status.last().map(String::as_str) != Some("completed") {
        let message = early.next().unwrap_or_else(|| server.recv());
        let params = &message["params"];
        match message["method"].as_str() {
            Some("notifications/progress") => progress.push(params.clone()),
            Some("notifications/tasks/status") => {
                assert_eq!(params["taskId"], id.as_str());
                status.push(params["status"].as_str().unwrap().to_owned());
            }
            _ => panic!("unexpected {message}"),
        }
    }
    let expected: Vec<Value> = (1..=3)
        .map(|stage| json!({"progressToken": "p-1", "progress": stage, "total": 3, "message": format!("stage {stage}/3: tides"), "_meta": {RELATED: {"taskId": id}}}))
        .collect();
    assert_eq!(progress, expected);
    assert_eq!(status, ["completed"]);

    // A cancelled task reports no further stage.
    let created = server.result(
        "tools/call",
        json!({"name": "research", "arguments": {"topic": "tides", "stages": 20, "stageMs": 100}, "task": {}, "_meta": {"progressToken": 7}}),
    );
    let id = created["task"]["taskId"].clone();
    let first = if server.unsolicited.is_empty() {
        server.recv()
    } else {
        server.unsolicited.remove(0)
    };
    assert_eq!(first["params"]["progress"], 1, "{first}");
    let cancelled = server.result("tasks/cancel", json!({"taskId": id}));
    assert_eq!(cancelled["status"], "cancelled");
    std::thread::sleep(Duration::from_millis(500));
    server.close_stdin();
    let mut later = std::mem::take(&mut server.unsolicited);
    while let Some(line) = server.recv_line() {
        later.push(serde_json::from_slice(&line).unwrap());
    }
    let stages: Vec<&Value> = later
        .iter()
        .filter_map(|message| message["params"].get("progress"))
        .collect();
    assert!(stages.len() <= 1, "stages reported after the cancellation: {later:?}");
    let told: Vec<&Value> = later
        .iter()
        .filter(|message| message["method"] == "notifications/tasks/status")
        .collect();
    assert_eq!(told.len(), 1, "{later:?}");
    assert_eq!(told[0]["params"]["status"], "cancelled");
}

#[test]
fn era_a_tasks_need_2025_11_25() {
    let mut server = common::Server::start(&["--tasks"]);
    let initialized = server.initialize_with("2025-06-18", json!({}));
    assert!(initialized["capabilities"].get("tasks").is_none(), "{initialized}");
    let error = server.error("tasks/get", json!({"taskId": "x"}));
    assert_eq!(
        error,
        json!({"code": -32601, "message": "method not found: tasks/get (tasks need protocol version 2025-11-25; this session speaks 2025-06-18)"})
    );
    let error = server.error(
        "tools/call",
        json!({"name": "research", "arguments": {"topic": "t"}, "task": {}}),
    );
    assert_eq!(
        error,
        json!({"code": -32601, "message": "research must be called as a task (execution.taskSupport is required), and tasks need protocol version 2025-11-25 (this session speaks 2025-06-18)"})
    );
}

#[test]
fn era_b_a_task_over_stdio_is_created_and_polled_to_its_end() {
    let log = EventLogFile::new("tasks-b");
    let mut server = era_b(&log);

    let refused = server.error(
        "tools/call",
        envelope(json!({"name": "research", "arguments": {"topic": "tides"}}), false),
    );
    assert_eq!(refused["code"], -32021);
    assert_eq!(
        refused["data"],
        json!({"requiredCapabilities": {"extensions": {EXTENSION: {}}}})
    );

    let created = call_b(&mut server, &json!({"topic": "tides", "stages": 2, "stageMs": 10}));
    let expected = json!({"resultType": "task", "status": "working", "statusMessage": "starting: tides", "ttlMs": 300_000, "pollIntervalMs": 20});
    assert_task(&created, ERA_B_KEYS, &expected);
    let id = &created["taskId"];
    assert_eq!(log.matching(&json!({"event": "task-created"}))[0]["id"], *id);
    let done = poll_b(&mut server, id, "completed");
    let mut keys = ERA_B_KEYS.to_vec();
    keys.push("result");
    assert_task(
        &done,
        &keys,
        &json!({"resultType": "complete", "statusMessage": "done: 2 stages"}),
    );
    assert_eq!(
        done["result"],
        json!({"content": [{"type": "text", "text": "Report on tides: 2 stages"}], "structuredContent": {"topic": "tides", "stages": 2, "angle": null}})
    );

    let failing = call_b(&mut server, &json!({"topic": "tides", "stageMs": 0, "fail": true}));
    let failed = poll_b(&mut server, &failing["taskId"], "failed");
    assert_eq!(
        failed["error"],
        json!({"code": -32603, "message": "research on tides failed at stage 3"})
    );
    assert!(failed.get("result").is_none());
    let erring = call_b(&mut server, &json!({"topic": "tides", "stageMs": 0, "toolError": true}));
    let done = poll_b(&mut server, &erring["taskId"], "completed");
    assert_eq!(done["result"]["isError"], true);

    for method in ["tasks/result", "tasks/list"] {
        let error = server.error(method, envelope(json!({"taskId": id}), true));
        assert_eq!(error["code"], -32601, "{method}: {error}");
    }
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let error = server.error(method, envelope(json!({"taskId": "feed", "inputResponses": {}}), true));
        assert_eq!(
            error,
            json!({"code": -32602, "message": "task feed not found"}),
            "{method}"
        );
    }
}

#[test]
fn era_b_a_question_is_answered_by_tasks_update_and_a_cancelled_task_stops() {
    let log = EventLogFile::new("tasks-b-ask");
    let mut server = era_b(&log);
    // A question: input_required with its input request, answered by tasks/update.
    let asking = call_b(
        &mut server,
        &json!({"topic": "tides", "stages": 2, "stageMs": 10, "ask": true}),
    );
    let id = &asking["taskId"];
    let waiting = poll_b(&mut server, id, "input_required");
    assert_eq!(
        waiting["inputRequests"],
        json!({"angle": {"method": "elicitation/create", "params": {
            "mode": "form",
            "message": "Which angle on tides?",
            "requestedSchema": {"type": "object", "properties": {"angle": {"type": "string"}}, "required": ["angle"]},
        }}})
    );
    assert_eq!(waiting["statusMessage"], "waiting for input: Which angle on tides?");
    let answer = json!({"action": "accept", "content": {"angle": "history"}});
    let acknowledged = server.result(
        "tasks/update",
        envelope(
            json!({"taskId": id, "inputResponses": {"elsewhere": answer, "angle": answer}}),
            true,
        ),
    );
    assert_eq!(acknowledged, json!({"resultType": "complete"}));
    let again = server.result(
        "tasks/update",
        envelope(
            json!({"taskId": id, "inputResponses": {"angle": {"action": "decline"}}}),
            true,
        ),
    );
    assert_eq!(again, json!({"resultType": "complete"}), "an answered key is ignored");
    let done = poll_b(&mut server, id, "completed");
    assert_eq!(
        done["result"]["content"][0]["text"],
        "Report on tides: 2 stages, angle history"
    );
    assert_eq!(
        statuses(&log, id.as_str().unwrap()),
        ["input_required", "working", "completed"]
    );

    let long = call_b(&mut server, &json!({"topic": "tides", "stages": 20, "stageMs": 100}));
    let id = &long["taskId"];
    let acknowledged = server.result("tasks/cancel", envelope(json!({"taskId": id}), true));
    assert_eq!(acknowledged, json!({"resultType": "complete"}));
    let cancelled = poll_b(&mut server, id, "cancelled");
    assert_eq!(cancelled["statusMessage"], "cancelled by the client");
    assert_eq!(
        log.matching(&json!({"event": "task-cancelled"})),
        [json!({"event": "task-cancelled", "id": id})]
    );
    // The work stopped: three stages later the task is as the cancellation left it.
    std::thread::sleep(Duration::from_millis(300));
    let later = server.result("tasks/get", envelope(json!({"taskId": id}), true));
    assert_eq!(later, cancelled);
    assert_eq!(statuses(&log, id.as_str().unwrap()), ["cancelled"]);
}

#[test]
fn era_b_tasks_over_http_are_the_servers_and_their_requests_need_mcp_name() {
    let log = EventLogFile::new("tasks-http-b");
    let remote = wire::Remote::start("http", &["--tasks", &log.arg()]);
    let created = message_of(&post_b(
        &remote,
        1,
        "tools/call",
        json!({"name": "research", "arguments": {"topic": "tides", "stageMs": 10}}),
        Some("research"),
    ));
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap();
    // Each POST is a session of its own: the next one finds the task all the same.
    let start = Instant::now();
    let done = loop {
        let response = post_b(&remote, 2, "tasks/get", json!({"taskId": id}), Some(id));
        let task = message_of(&response)["result"].clone();
        if task["status"] == "completed" {
            break task;
        }
        assert!(start.elapsed() < HANG_GUARD, "{task}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(done["result"]["content"][0]["text"], "Report on tides: 3 stages");

    for name in [Some("0123"), None] {
        let response = post_b(&remote, 3, "tasks/get", json!({"taskId": id}), name);
        assert_eq!(response.status(), 400, "{}", response.text());
        let error = &response.json()["error"];
        assert_eq!(error["code"], -32020, "{error}");
        assert!(error["message"].as_str().unwrap().contains("Mcp-Name"), "{error}");
    }
    let undeclared = envelope(json!({"name": "research", "arguments": {"topic": "t"}}), false);
    let refused = post_message(&remote, &wire::request(4, "tools/call", undeclared), Some("research"));
    assert_eq!(refused.status(), 400, "{}", refused.text());
    assert_eq!(refused.json()["error"]["code"], -32021);

    let long = message_of(&post_b(
        &remote,
        5,
        "tools/call",
        json!({"name": "research", "arguments": {"topic": "tides", "stages": 20}}),
        Some("research"),
    ));
    let long_id = long["result"]["taskId"].as_str().unwrap();
    let ack = message_of(&post_b(
        &remote,
        6,
        "tasks/cancel",
        json!({"taskId": long_id}),
        Some(long_id),
    ));
    assert_eq!(ack["result"], json!({"resultType": "complete"}));
    let task = message_of(&post_b(
        &remote,
        7,
        "tasks/get",
        json!({"taskId": long_id}),
        Some(long_id),
    ));
    assert_eq!(task["result"]["status"], "cancelled");
    assert_eq!(statuses(&log, long_id), ["cancelled"]);

    // An initialize-era session does not see the stateless era's tasks.
    let session = wire::Session::start(&remote);
    let error = session.call(&wire::request(8, "tasks/get", json!({"taskId": id})));
    assert_eq!(error["error"]["message"], format!("task {id} not found"));
}

#[test]
fn era_a_over_http_the_question_goes_on_the_tasks_result_stream_and_progress_on_the_get_stream() {
    let remote = wire::Remote::start("http", &["--tasks"]);
    let session = wire::Session::start_with(&remote, json!({"elicitation": {}}));
    let call = json!({"name": "research", "arguments": {"topic": "tides", "stages": 2, "stageMs": 10, "ask": true}, "task": {}, "_meta": {"progressToken": "p"}});
    let created = session.call(&wire::request(1, "tools/call", call));
    let id = created["result"]["task"]["taskId"].as_str().unwrap().to_owned();

    let (mut result_conn, head) = session.open(&wire::request(2, "tasks/result", json!({"taskId": id})));
    assert_eq!(head.status, 200);
    let mut result_events = result_conn.events(&head);
    let mut next_message = || loop {
        let event = result_events.expect();
        if !event.data.is_empty() {
            return event.json();
        }
    };
    let question = next_message();
    assert_eq!(question["method"], "elicitation/create", "{question}");
    assert_eq!(question["params"]["message"], "Which angle on tides?");
    assert_eq!(question["params"]["_meta"][RELATED], json!({"taskId": id}));
    let answer = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"angle": "history"}}});
    assert_eq!(session.post(&answer).status(), 202);
    let result = next_message();
    assert_eq!(
        (&result["id"], &result["result"]["content"][0]["text"]),
        (&json!(2), &json!("Report on tides: 2 stages, angle history"))
    );

    // Progress and status went to the standalone stream, where they waited for a GET.
    let (mut get_conn, head) = session.get(&[]);
    assert_eq!(head.status, 200);
    let mut get_events = get_conn.events(&head);
    let mut seen = Vec::new();
    while seen.last() != Some(&json!(["status", "completed"])) {
        let event = get_events.expect();
        if event.data.is_empty() {
            continue;
        }
        let message = event.json();
        match message["method"].as_str().unwrap() {
            "notifications/progress" => seen.push(json!(["progress", message["params"]["progress"]])),
            "notifications/tasks/status" => seen.push(json!(["status", message["params"]["status"]])),
            other => panic!("unexpected {other}: {message}"),
        }
    }
    assert_eq!(
        seen,
        [
            json!(["progress", 1]),
            json!(["status", "input_required"]),
            json!(["status", "working"]),
            json!(["progress", 2]),
            json!(["status", "completed"]),
        ]
    );

    // Another session does not see the task.
    let other = wire::Session::start(&remote);
    let error = other.call(&wire::request(3, "tasks/get", json!({"taskId": id})));
    assert_eq!(
        error["error"],
        json!({"code": -32602, "message": format!("task {id} not found")})
    );
}
