"""``dg dev`` run from the repository root as the README says (``[tool.dg]`` in pyproject.toml),
serving on 127.0.0.1: the GraphQL API lists what we defined and runs a maintenance job; headless
Chromium shows the demo table's asset graph.

The server runs in its own process group with default SIGINT/SIGTERM handlers (set by a
small exec shim, so nothing runs between fork and exec) and is stopped by its group id.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import pytest

from tests.conftest import CHROMEDRIVER, CHROMIUM, DG
from tests.dagster.conftest import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.dg]

LOCATION = "delta_maintenance"
REPOSITORY = "__repository__"
ARTIFACTS = REPO_ROOT / "tests" / "artifacts"
EXEC_WITH_DEFAULT_SIGNALS = (
    "import os, signal, sys\n"
    "signal.signal(signal.SIGINT, signal.SIG_DFL)\n"
    "signal.signal(signal.SIGTERM, signal.SIG_DFL)\n"
    "os.execv(sys.argv[1], sys.argv[1:])\n"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DagsterDev:
    def __init__(self, root: pathlib.Path):
        self.root = root
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = root / "dagster_dev.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        home = self.root / "dagster_home"
        home.mkdir()
        (home / "dagster.yaml").touch()
        env = {
            "PATH": f"{pathlib.Path(sys.executable).parent}:/usr/bin:/bin",
            "HOME": str(self.root),
            "DAGSTER_HOME": str(home),
            "DELTA_MAINTENANCE_TABLES": str(self.root / "tables.yaml"),
            "PYTHONPATH": str(REPO_ROOT),
            "JAVA_HOME": os.environ.get("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64"),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_MASTER": "local[1]",
            "DAGSTER_DISABLE_TELEMETRY": "1",
            "VIRTUAL_ENV": sys.prefix,  # as after `source .venv/bin/activate`
        }
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", EXEC_WITH_DEFAULT_SIGNALS, DG, "dev", "-h", "127.0.0.1", "-p", str(self.port)],
            cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"dg dev exited early:\n{self.log_tail()}")
            try:
                data = self.graphql("{ repositoryOrError(repositorySelector: {repositoryLocationName: "
                                    f'"{LOCATION}", repositoryName: "{REPOSITORY}"}}) {{ __typename }} }}')
                if data["repositoryOrError"]["__typename"] == "Repository":
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError, KeyError):
                pass
            time.sleep(1.0)
        raise AssertionError(f"dg dev did not load the code location:\n{self.log_tail()}")

    def graphql(self, query: str, variables: dict | None = None) -> dict:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        req = urllib.request.Request(f"{self.url}/graphql", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            payload = json.loads(resp.read())
        assert "errors" not in payload, payload["errors"]
        return payload["data"]

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:] if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        pgid = self.proc.pid  # start_new_session: the group id is the leader's pid
        os.killpg(pgid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(pgid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        # children (webserver, daemon, code server, run workers) share the group
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="module")
def server():
    from demo.table import build_demo_table

    root = pathlib.Path(tempfile.mkdtemp(prefix="dm-ui-"))
    shutil.copyfile(REPO_ROOT / "tables.yaml", root / "tables.yaml")  # demo_data/events beside it
    table = build_demo_table(root / "demo_data" / "events", rows=2000, appends=10, days=2,
                             delete_fraction=0.1)
    dev = DagsterDev(root)
    try:
        dev.start()
        yield dev, table
    finally:
        dev.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.spark  # the maintenance run
def test_graphql_lists_definitions_and_runs_maintenance(server):
    dev, table = server
    data = dev.graphql("""
      query($loc: String!, $repo: String!) {
        repositoryOrError(repositorySelector: {repositoryLocationName: $loc, repositoryName: $repo}) {
          ... on Repository {
            jobs { name }
            schedules { name cronSchedule }
            sensors { name }
            assetNodes { assetKey { path } groupName isObservable }
          }
        }
      }""", {"loc": LOCATION, "repo": REPOSITORY})
    repo = data["repositoryOrError"]
    assets = {"/".join(a["assetKey"]["path"]): a for a in repo["assetNodes"]}
    for op in ("compact", "zorder", "vacuum", "checkpoint", "manifest", "delta_table"):
        assert assets[f"events/{op}"]["groupName"] == "events"
    assert assets["events/delta_table"]["isObservable"]
    assert "events/daily_summary" in assets
    jobs = {j["name"] for j in repo["jobs"]}
    assert {"events_maintenance", "events_compact", "events_vacuum", "all_tables_maintenance",
            "events_downstream_refresh"} <= jobs
    assert {(s["name"], s["cronSchedule"]) for s in repo["schedules"]} >= {
        ("events_compact_schedule", "0 2 * * *"), ("events_vacuum_schedule", "0 3 * * 0")}
    # the discover root (no tables under it here) still gives the partitions' discovery and log sensors
    assert {s["name"] for s in repo["sensors"]} == {"events_delta_log_sensor", "default_automation_condition_sensor",
                                                    "discovered_tables_sensor", "discovered_tables_delta_log_sensor"}

    version_before = table.latest_version()
    checkpoint_before = table.last_checkpoint_version()
    launched = dev.graphql("""
      mutation($params: ExecutionParams!) {
        launchRun(executionParams: $params) {
          __typename
          ... on LaunchRunSuccess { run { runId } }
          ... on PythonError { message }
          ... on RunConfigValidationInvalid { errors { message } }
        }
      }""", {"params": {"selector": {"repositoryLocationName": LOCATION, "repositoryName": REPOSITORY,
                                     "jobName": "events_maintenance"}, "runConfigData": {}}})
    assert launched["launchRun"]["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["launchRun"]["run"]["runId"]
    deadline = time.monotonic() + 420
    status = None
    while time.monotonic() < deadline:
        run = dev.graphql("query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }",
                          {"id": run_id})["runOrError"]
        status = run["status"]
        if status in ("SUCCESS", "FAILURE", "CANCELED"):
            break
        time.sleep(2)
    assert status == "SUCCESS", dev.log_tail()
    assert table.latest_version() > version_before
    # the checkpoint asset writes one only when tables.yaml's interval (10) of commits follow the last
    latest = table.latest_version()
    due = latest - (checkpoint_before if checkpoint_before is not None else -1) >= 10
    assert table.last_checkpoint_version() == (latest if due else checkpoint_before)

    mats = dev.graphql("""
      query { assetOrError(assetKey: {path: ["events", "compact"]}) {
        ... on Asset { assetMaterializations(limit: 1) { runId metadataEntries { label } } } } }""")
    (mat,) = mats["assetOrError"]["assetMaterializations"]
    labels = {m["label"] for m in mat["metadataEntries"]}
    assert mat["runId"] == run_id
    assert {"files_before", "files_after", "file_size_distribution", "summary", "health_score_before",
            "health_score_after"} <= labels


@contextlib.contextmanager
def _chromium():
    """Headless Chromium driven by selenium, with a throwaway profile."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="dm-chrome-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={profile}", "--window-size=1600,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.set_page_load_timeout(120)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _skip_welcome(driver) -> None:
    for button in driver.find_elements("xpath", "//button[normalize-space()='Skip']"):
        button.click()  # the first-visit "join the community" dialog


@pytest.mark.browser
def test_browser_shows_the_asset_graph(server):
    dev, _ = server
    wanted = ("compact", "zorder", "vacuum", "checkpoint", "manifest", "delta_table")
    with _chromium() as driver:
        body = _screenshot_when(driver, f"{dev.url}/locations/{LOCATION}/asset-groups/events",
                                ARTIFACTS / "ui_asset_graph_events.png", lambda t: all(w in t for w in wanted))
        assert "Asset Group in" in body and LOCATION in body


def _observe_through_instance(dev: DagsterDev) -> None:
    """Observe ``events/delta_table`` into the server's own instance (its DAGSTER_HOME), as the
    log sensor's ticks would."""
    from dagster import AssetKey, DagsterInstance
    from dagster._core.definitions.observe import observe

    from definitions import build_definitions, build_resources
    from resources.config import load_config

    config = load_config(dev.root / "tables.yaml")
    key = AssetKey(["events", "delta_table"])
    source = [a for a in build_definitions(config).assets if getattr(a, "key", None) == key]
    with DagsterInstance.from_config(str(dev.root / "dagster_home")) as instance:
        assert observe(source, instance=instance, resources=build_resources(config)).success


@pytest.mark.browser
def test_browser_plots_the_table_health(server):
    """Item 7: three observations at three versions; the asset page's metadata plots show them."""
    from delta_core.write.table_writes import append
    from demo.data import event_batch

    dev, table = server
    for seed in (0, 1, 2):
        if seed:
            append(table, event_batch(50, days=2, seed=200 + seed))
        _observe_through_instance(dev)
    plotted = ("health_score", "health_num_files", "health_small_file_ratio", "health_deleted_rows_ratio",
               "health_versions_since_checkpoint", "health_skip_ratio")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "ui_health_plots_events.png"
    with _chromium() as driver:
        driver.get(f"{dev.url}/assets/events/delta_table")

        def plots_button(d):
            _skip_welcome(d)
            buttons = d.find_elements("xpath", "//button[normalize-space()='Plots']")
            return buttons[0] if buttons and "Join the Dagster community" not in d.find_element(
                "tag name", "body").text else False

        def plots_drawn(d) -> bool:
            text = d.find_element("tag name", "body").text
            return all(name in text for name in plotted) and len(d.find_elements("tag name", "canvas")) >= len(plotted)

        _wait_until(driver, plots_button, shot).click()
        _wait_until(driver, plots_drawn, shot, seconds=60)
        # the charts finish drawing; the score's chart is brought into view for the picture
        _save_settled(driver, shot, scroll_to="health_score")
        canvases = driver.find_elements("tag name", "canvas")
        assert len(canvases) >= len(plotted)
        assert all(c.size["width"] > 100 and c.size["height"] > 50 for c in canvases[:len(plotted)])


def _run_in_server_instance(dev: DagsterDev, job_name: str) -> None:
    """Run ``job_name`` of the code location into the server's own instance (its DAGSTER_HOME),
    as the log sensor's or a schedule's run would."""
    from dagster import DagsterInstance

    from definitions import build_definitions
    from resources.config import load_config

    defs = build_definitions(load_config(dev.root / "tables.yaml"))
    with DagsterInstance.from_config(str(dev.root / "dagster_home")) as instance:
        assert defs.resolve_job_def(job_name).execute_in_process(instance=instance).success


def _wait_until(driver, condition, shot: pathlib.Path, *, seconds: int = 120):
    """``condition(driver)``'s first true value, polled each second for up to ``seconds``; on a
    timeout the page's picture and text are saved beside ``shot`` (``<name>_timeout.png/.txt``)."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, seconds, poll_frequency=1).until(condition)
    except TimeoutException:
        timeout = shot.with_name(shot.stem + "_timeout.png")
        driver.save_screenshot(str(timeout))
        timeout.with_suffix(".txt").write_text(driver.current_url + "\n" + driver.find_element("tag name", "body").text)
        raise


def _save_settled(driver, shot: pathlib.Path, *, scroll_to: str | None = None) -> None:
    """Save ``shot`` once the page has settled, scrolled to the element whose text is ``scroll_to``."""
    time.sleep(2)  # let the layout settle before the picture
    if scroll_to is not None:
        target = driver.find_element("xpath", f"//*[normalize-space()='{scroll_to}']")
        driver.execute_script("arguments[0].scrollIntoView({block: 'start'});", target)
        time.sleep(1)
    driver.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000


def _screenshot_when(driver, url: str, shot: pathlib.Path, ready, *, scroll_to: str | None = None) -> str:
    """Open ``url``, wait until ``ready(body text)``, save ``shot``; the page's text."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.get(url)

    seen: list[str] = []

    def loaded(d) -> bool:
        _skip_welcome(d)
        text = d.find_element("tag name", "body").text
        seen.append(text)
        return "Join the Dagster community" not in text and ready(text)

    _wait_until(driver, loaded, shot)
    _save_settled(driver, shot, scroll_to=scroll_to)
    return seen[-1]  # the page's text when it was ready (it may re-render after)


@pytest.mark.browser
def test_browser_shows_the_health_checks(server):
    """Issue 29: the table asset's checks (run by the log sensor's checks job) with their
    statuses, on the asset's Checks tab and in the catalog."""
    from delta_core.health.check_names import CHECK_REMEDIES

    dev, _ = server
    _run_in_server_instance(dev, "events_checks")
    with _chromium() as driver:
        statuses = ("Failed", "Warning", "Succeeded", "Passed")
        text = _screenshot_when(driver, f"{dev.url}/assets/events/delta_table?view=checks",
                                ARTIFACTS / "ui_health_checks_events.png",
                                lambda t: all(name in t for name in CHECK_REMEDIES) and any(s in t for s in statuses))
        assert "small_files" in text and any(s in text for s in statuses)
        catalog = _screenshot_when(driver, f"{dev.url}/assets?groups=events",
                                   ARTIFACTS / "ui_catalog_checks.png",
                                   lambda t: "delta_table" in t and "compact" in t)
        assert "events" in catalog


@pytest.mark.browser
def test_browser_shows_the_fleet_report(server):
    """The fleet report asset's table of every table's health and checks."""
    dev, _ = server
    _run_in_server_instance(dev, "fleet_report")
    with _chromium() as driver:
        text = _screenshot_when(driver, f"{dev.url}/assets/fleet/report",
                                ARTIFACTS / "ui_fleet_report.png",
                                lambda t: "failing_checks" in t and "next_maintenance" in t, scroll_to="report")
        assert "events" in text and "gain_points" in text
