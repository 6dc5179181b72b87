"""`gpusteward quota ...`: plan, show, approve, reject, apply (or dry-run) and roll back quota plans.

Register with `cli.add_command(quota)`. Approvals and rejections are control actions
(`warehouse.control`), the same rows the service's API writes; applies and rollbacks go through
`quota.workflow` to Slurm (`sacctmgr`, or slurmrestd with `--rest-socket`/`--rest-url`), or with
`--scheduler kueue|volcano --kube-url URL` to Kueue ClusterQueue nominalQuota or a Volcano Queue's
capability/deserved/guarantee, and leave an audit record each (`warehouse.quota_store`).
"""

from __future__ import annotations

import dataclasses
import functools
import getpass
import json
import os
import pwd
from datetime import UTC, datetime
from typing import Any

import click

from gpusteward.domain import Month
from gpusteward.errors import InputError
from service.cli_options import config_option, db_option, load, month_option, open_for_writing, pick_month

by_option = click.option(
    "--by", "actor", default=None,
    help="Who does this, for the audit trail (default: the login name; with separation of duties, only that).",
)
api_option = click.option(
    "--api", "api_url", default=None, envvar="GPUSTEWARD_API_URL",
    help="Decide through the running service's control API at this URL (default: $GPUSTEWARD_API_URL), as the "
         "owner of the token in $GPUSTEWARD_API_TOKEN; without it the warehouse file is written directly.",
)
API_TOKEN_ENV = "GPUSTEWARD_API_TOKEN"  # noqa: S105 - the name of the variable, not a token
lang_option = click.option(
    "--lang", type=click.Choice(["en", "zh"]), default="en", show_default=True,
    help="Language of the reasons, evidence and effects.",
)


def _now() -> datetime:
    return datetime.now(UTC)


def _login() -> str:
    """The operating system account running this command (not $USER or $LOGNAME, which anyone can set)."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:  # an account without a passwd entry (some containers)
        return f"uid:{os.getuid()}"


def _actor(actor: str | None, *, separation: bool = False) -> str:
    """Who the audit names. With separation of duties it is the OS account, and --by (or $GPUSTEWARD_USER)
    naming anyone else is refused: otherwise whoever proposed a plan could approve it under another name."""
    if not separation:
        return actor or os.environ.get("GPUSTEWARD_USER") or getpass.getuser()
    login = _login()
    claimed = actor or os.environ.get("GPUSTEWARD_USER")
    if claimed and claimed != login:
        raise click.UsageError(
            f"separation of duties is on (service.separation_of_duties): this command acts as {login}, the "
            f"account running it, and cannot act as {claimed}; run it as them, or use the service's API "
            "(--api) with their own token"
        )
    return login


@click.group("quota")
def quota() -> None:
    """Quota plans: recommend, approve or reject, apply to Slurm, Kueue or Volcano (all or nothing), roll back."""


@quota.command("plan")
@config_option
@db_option
@month_option
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@lang_option
def quota_plan(config_path: str | None, db_path: str | None, month: Month | None, as_json: bool, lang: str) -> None:
    """Recommend quota changes for a month, store the plan and print it. The plan records who proposed
    it ($GPUSTEWARD_USER, else the login name): with separation of duties they cannot approve it."""
    from quota.plan import Plan, render_text
    from service.pipeline import evaluate as run_evaluation

    config = load(config_path)
    with open_for_writing(config, db_path) as wh:
        chosen = pick_month(wh, month, config)
        run_evaluation(wh, config, chosen, proposed_by=_actor(None, separation=config.service.separation_of_duties))
        plans = wh.plans(chosen)
    plan = Plan.from_dict(json.loads(plans.row(-1, named=True)["body"]))
    click.echo(plan.to_json() if as_json else render_text(plan, lang))


@quota.command("show")
@config_option
@db_option
@click.argument("plan_id", required=False)
@lang_option
def quota_show(config_path: str | None, db_path: str | None, plan_id: str | None, lang: str) -> None:
    """List stored plans with their state, or print one with its decision and apply history."""
    from quota.plan import Plan, render_text
    from reports.locale import Formatter
    from warehouse import quota_store

    words = Formatter(lang)  # type: ignore[arg-type]
    config = load(config_path)
    with open_for_writing(config, db_path) as wh:
        if plan_id is None:
            for row in wh.plans().iter_rows(named=True):
                state = quota_store.plan_state(wh, row["plan_id"])
                click.echo(f"{row['plan_id']}  {row['month']}  {words.term('plan_state', state)}  {row['created_at']}")
            return
        body = quota_store.plan_body(wh, plan_id)
        if body is None:
            raise click.ClickException(f"no plan {plan_id!r}")
        state = quota_store.plan_state(wh, plan_id)
        decided = quota_store.decision(wh, plan_id)
        history = quota_store.applies(wh, plan_id)
    click.echo(render_text(Plan.from_dict(body), lang), nl=False)
    click.echo("\n" + words.t("quota.cli.state", state=words.term("plan_state", state)))
    if decided is not None:
        click.echo(words.t("quota.cli.decided", decision=words.term("plan_state", decided.decision),
                           by=decided.decided_by, at=f"{decided.decided_at:%Y-%m-%d %H:%M:%S}"))
        if decided.override:
            click.echo(words.t("quota.cli.override", reason=decided.override))
    for r in history:
        when = f"{r.started_at:%Y-%m-%d %H:%M:%S}"
        click.echo(words.t("quota.cli.history", when=when, action=r.action, actor=r.actor, transport=r.transport,
                           result=r.result, detail=r.detail))


def _decide_through_api(api_url: str, plan_id: str, *, action: str, actor: str | None, note: str | None,
                        override: str | None) -> None:
    """The decision as a control API call: the service names the caller from their token, never from --by."""
    import httpx

    if actor is not None:
        raise click.UsageError("--by is not taken with --api: the service names you from your token")
    token = os.environ.get(API_TOKEN_ENV)
    if not token:
        raise click.UsageError(f"--api needs your control API token in ${API_TOKEN_ENV} "
                               "(`gpusteward api-token create`)")
    verb = action.removeprefix("plan.")
    body = {"reason": note, **({"override": override} if override is not None else {})}
    try:
        response = httpx.post(f"{api_url.rstrip('/')}/api/v1/plans/{plan_id}/{verb}", json=body, timeout=60,
                              headers={"Authorization": f"Bearer {token}"})
    except httpx.HTTPError as exc:
        raise click.ClickException(f"{api_url}: {exc}") from exc
    try:
        answer = response.json()
    except ValueError:
        answer = {"error": response.text[:300]}
    if response.status_code >= 400:
        raise click.ClickException(f"{response.status_code}: {answer.get('error', answer)}")
    click.echo(json.dumps({"action_id": answer.get("action_id"), "action": action, "plan_id": plan_id,
                           "by": answer.get("actor"), "override": answer.get("override")}, indent=2))


def _decide(config_path: str | None, db_path: str | None, plan_id: str, *, action: str, actor: str | None,
            note: str | None, lang: str = "en", override: str | None = None, api_url: str | None = None) -> None:
    from quota.plan import Plan, render_text
    from warehouse import control, quota_store

    if api_url:
        _decide_through_api(api_url, plan_id, action=action, actor=actor, note=note, override=override)
        return
    config = load(config_path)
    separation = config.service.separation_of_duties
    who = _actor(actor, separation=separation)
    with open_for_writing(config, db_path) as wh:
        body = quota_store.plan_body(wh, plan_id)
        if body is not None:  # what is decided on: the changes, their evidence and the replay's result
            click.echo(render_text(Plan.from_dict(body), lang), err=True)
        try:
            entry = control.record(wh, who, action, plan_id, at=_now(), reason=note,  # type: ignore[arg-type]
                                   override=override, separation=separation)
        except control.ControlError as exc:
            raise click.ClickException(str(exc)) from exc
    click.echo(json.dumps({"action_id": entry.action_id, "action": entry.action, "plan_id": plan_id,
                           "by": entry.actor, "at": str(entry.at), "note": entry.reason,
                           "override": entry.override}, indent=2))


@quota.command("approve")
@config_option
@db_option
@click.argument("plan_id")
@by_option
@api_option
@click.option("--note", default=None, help="Why, stored with the approval.")
@click.option("--override", default=None,
              help="Why a plan whose replay makes a protected objective worse is approved anyway (kept in the audit).")
@lang_option
def quota_approve(config_path: str | None, db_path: str | None, plan_id: str, *, actor: str | None,
                  api_url: str | None, note: str | None, override: str | None, lang: str) -> None:
    """Approve a proposed plan (recorded with who and when; a plan is decided once). The plan, with its
    replayed effect, is printed first (on stderr; the record of the approval goes to stdout as JSON). A plan
    flagged for a protected objective is refused without --override."""
    _decide(config_path, db_path, plan_id, action="plan.approve", actor=actor, note=note, lang=lang,
            override=override, api_url=api_url)


@quota.command("reject")
@config_option
@db_option
@click.argument("plan_id")
@by_option
@api_option
@click.option("--note", default=None, help="Why, stored with the rejection.")
def quota_reject(config_path: str | None, db_path: str | None, plan_id: str, *, actor: str | None,
                 api_url: str | None, note: str | None) -> None:
    """Reject a proposed plan."""
    _decide(config_path, db_path, plan_id, action="plan.reject", actor=actor, note=note, api_url=api_url)


def _slurm_options(fn: Any) -> Any:
    for option in reversed((
        click.option("--scheduler", type=click.Choice(["slurm", "kueue", "volcano"]), default="slurm",
                     show_default=True, help="Where the plan's limits live."),
        click.option("--kubeconfig", default=None, type=click.Path(dir_okay=False),
                     help="kubeconfig file (default: [kubernetes] of the config, then the pod's service account,"
                          " $KUBECONFIG, ~/.kube/config)."),
        click.option("--kube-context", default=None, help="Context of the kubeconfig (default: its current one)."),
        click.option("--in-cluster", is_flag=True, default=False,
                     help="Use the pod's service account token and the cluster CA."),
        click.option("--kube-url", default=None, help="Kubernetes API server URL, instead of a kubeconfig."),
        click.option("--kube-token-file", default=None, type=click.Path(dir_okay=False),
                     help="With --kube-url: file holding the bearer token (default: $KUBE_TOKEN)."),
        click.option("--kube-ca", default=None, type=click.Path(dir_okay=False),
                     help="With --kube-url: CA bundle to verify the API server with."),
        click.option("--kueue-flavor", default=None,
                     help="ResourceFlavor of the ClusterQueue's GPUs (default: its only GPU flavor)."),
        click.option("--volcano-field", type=click.Choice(["capability", "deserved", "guarantee"]),
                     default="capability", show_default=True, help="Which Volcano Queue limit the plan sets."),
        click.option("--slurm-cli", "slurm_path", default=None,
                     help="PATH to search for sacctmgr (default: $PATH)."),
        click.option("--rest-socket", default=None, help="slurmrestd unix socket (QOS only on Slurm 22.05)."),
        click.option("--rest-url", default=None, help="slurmrestd URL (JWT from $SLURM_JWT)."),
        click.option("--rest-user", default=None, help="User name sent with the JWT."),
    )):
        fn = option(fn)
    return fn


def _kube_api(ctx_args: dict[str, Any], config: Any) -> Any:
    """The API server and credentials: the command line's, else the config's [kubernetes] (docs/kubernetes.md)."""
    from collectors.kube import KubeApi, connect

    url, token_file = ctx_args["kube_url"], ctx_args["kube_token_file"]
    if url and not token_file and os.environ.get("KUBE_TOKEN"):
        return KubeApi(url, token=os.environ["KUBE_TOKEN"], verify=ctx_args["kube_ca"] or True,
                       credentials=f"server {url} with the token in $KUBE_TOKEN")
    cfg = config.kubernetes
    if url:
        cfg = dataclasses.replace(cfg, auth="server", server=url, token_file=token_file or "",
                                  ca_file=ctx_args["kube_ca"] or "")
    elif ctx_args["in_cluster"]:
        cfg = dataclasses.replace(cfg, auth="in_cluster")
    elif ctx_args["kubeconfig"] or ctx_args["kube_context"]:
        cfg = dataclasses.replace(cfg, auth="kubeconfig", kubeconfig=ctx_args["kubeconfig"] or cfg.kubeconfig,
                                  context=ctx_args["kube_context"] or cfg.context)
    # Paths from the command line are the caller's; those from the config are relative to its file.
    base = "." if url or ctx_args["kubeconfig"] else config.base_dir
    try:
        return connect(cfg, base_dir=base)
    except InputError as exc:  # no such kubeconfig or context, not in a pod: before anything is read or written
        raise click.ClickException(str(exc)) from exc


def _run(ctx_args: dict[str, Any], plan_id: str, *, rollback: bool, dry_run: bool = False) -> None:
    from collectors.kube import KueueQuotaWriter, VolcanoQuotaWriter
    from collectors.slurm import RestQuotaWriter, SacctmgrQuotaWriter, SlurmCli, SlurmRest
    from collectors.slurm.writes import QuotaWriter
    from quota.workflow import PlanNotFoundError, apply_plan, rollback_plan, target_of
    from warehouse.quota_store import WarehouseQuotaStore

    config = load(ctx_args["config_path"])
    separation = config.service.separation_of_duties
    actor = _actor(ctx_args["actor"], separation=separation)
    rest: SlurmRest | None = None
    kube: Any = None
    writer: QuotaWriter
    scheduler = ctx_args["scheduler"]
    if scheduler in ("kueue", "volcano"):
        kube = _kube_api(ctx_args, config)
        writer = KueueQuotaWriter(kube) if scheduler == "kueue" else VolcanoQuotaWriter(kube)
    else:
        if ctx_args["rest_socket"]:
            rest = SlurmRest(socket=ctx_args["rest_socket"])
        elif ctx_args["rest_url"]:
            rest = SlurmRest(base_url=ctx_args["rest_url"], user=ctx_args["rest_user"],
                             token=os.environ.get("SLURM_JWT"))
        writer = RestQuotaWriter(rest) if rest is not None else SacctmgrQuotaWriter(
            SlurmCli(path=ctx_args["slurm_path"]))
    # The same mapping applies and rolls back: the Kueue flavor and the Volcano field must match.
    targets = functools.partial(target_of, flavor=ctx_args["kueue_flavor"], field=ctx_args["volcano_field"])
    try:
        with open_for_writing(config, ctx_args["db_path"]) as wh:
            store = WarehouseQuotaStore(wh)
            if rollback:
                record = rollback_plan(store, writer, plan_id, actor=actor, clock=_now, targets=targets)
            else:
                record = apply_plan(store, writer, plan_id, actor=actor, clock=_now, dry_run=dry_run,
                                    targets=targets, separation=separation)
    except PlanNotFoundError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        if rest is not None:
            rest.close()
        if kube is not None:
            kube.close()
    body = dataclasses.asdict(record)
    click.echo(json.dumps(body, indent=2, default=str))
    if record.result not in ("applied", "dry-run", "rolled-back"):
        raise click.ClickException(f"{record.action} {record.result}: {record.detail}")


@quota.command("apply")
@config_option
@db_option
@click.argument("plan_id")
@by_option
@click.option("--dry-run", is_flag=True, help="Read every limit and check it; write nothing (no approval needed).")
@_slurm_options
def quota_apply(**kwargs: Any) -> None:
    """Apply an approved plan to Slurm: all limits or none, each read back; refused if any limit changed."""
    _run(kwargs, kwargs["plan_id"], rollback=False, dry_run=kwargs["dry_run"])


@quota.command("rollback")
@config_option
@db_option
@click.argument("plan_id")
@by_option
@_slurm_options
def quota_rollback(**kwargs: Any) -> None:
    """Restore the limits an applied plan changed (refused if any was changed since)."""
    _run(kwargs, kwargs["plan_id"], rollback=True)



def parse_setting(text: str) -> tuple[tuple[str, str], int]:
    """`CLUSTER/ACCOUNT=GPUS` as ((cluster, account), gpus); a clear error for anything else."""
    target, sep, value = text.partition("=")
    cluster, slash, account = target.partition("/")
    if not (sep and slash and cluster and account and value.strip().isdigit()):
        raise click.BadParameter(f"expected CLUSTER/ACCOUNT=GPUS (e.g. west/vision=24), got {text!r}")
    return (cluster.strip(), account.strip()), int(value)


@quota.command("whatif")
@config_option
@db_option
@month_option
@click.option("--plan", "plan_id", default=None, help="Replay a stored plan's limit changes.")
@click.option("--set", "settings", multiple=True, help="A limit to try, CLUSTER/ACCOUNT=GPUS (repeatable).")
@lang_option
def quota_whatif(config_path: str | None, db_path: str | None, month: Month | None, plan_id: str | None, *,
                 settings: tuple[str, ...], lang: str) -> None:
    """Replay a month's jobs under other limits: a stored plan's, or your own (--set); nothing is stored."""
    from quota.analysis import analyse, plan_replay
    from quota.plan import Plan, protected_lines, replay_lines
    from quota.protected import protected_worse
    from reports.locale import Formatter
    from sla.common import classified_jobs, window_of
    from sla.fairness import cluster_gpus
    from warehouse import quota_store

    changes = dict(parse_setting(s) for s in settings)
    config = load(config_path)
    with open_for_writing(config, db_path) as wh:
        chosen = pick_month(wh, month, config)
        if plan_id is not None:
            body = quota_store.plan_body(wh, plan_id)
            if body is None:
                raise click.ClickException(f"no plan {plan_id!r}")
            stored = Plan.from_dict(body)
            changes = {**{(i.cluster, i.name): i.proposed_gpus for i in stored.changes
                          if i.kind == "account" and i.proposed_gpus is not None}, **changes}
        inputs = wh.evaluation_inputs(chosen, idle=config.idle)
        tree = wh.slurm_queue(chosen)[1]
    window = window_of(inputs)
    analysis = analyse(classified_jobs(inputs, config), inputs.quota_snapshots, config, window.start, window.end,
                       capacity=cluster_gpus(config, inputs.gpus), inventory=inputs.gpus, tree=tree)
    unknown = sorted(f"{c}/{a}" for c, a in changes if (c, a) not in analysis.limits)
    if unknown:
        raise click.ClickException(f"no account limit stored for {', '.join(unknown)} in {chosen}")
    table = plan_replay(analysis, changes)
    flags = protected_worse(analysis, dict(changes), config)
    shown = Plan("whatif", str(chosen), datetime.now(UTC), (), replay=tuple(table.to_dicts()), protected=tuple(flags))
    words = Formatter(lang)  # type: ignore[arg-type]
    for (cluster, account), gpus in sorted(changes.items()):
        click.echo(words.t("quota.cli.whatif_change", target=f"{cluster}/{account}",
                           before=analysis.limits[(cluster, account)], after=gpus))
    for block in (protected_lines(shown, lang), replay_lines(shown, lang)):
        if block:
            click.echo("\n" + "\n".join(block))
