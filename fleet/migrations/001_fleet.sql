-- toolgate fleet schema, version 1. Applied by toolgate fleet init, in one
-- transaction, by a role that may create schemas (the database's owner).
-- Who may do what is enforced here, by Postgres, not by toolgate's code:
--   toolgate_agent     a host's daemon: inserts its own events and asks,
--                      reads its own asks and their decisions, reports what
--                      it applied; cannot decide.
--   toolgate_approver  a person: reads every ask, decides only through
--                      toolgate.decide(), which checks pending and not
--                      expired and records session_user and the client
--                      address as the actor.
--   toolgate_auditor   reads everything, changes nothing.

CREATE SCHEMA IF NOT EXISTS toolgate;
REVOKE ALL ON SCHEMA toolgate FROM PUBLIC;
GRANT USAGE ON SCHEMA toolgate TO toolgate_agent, toolgate_approver, toolgate_auditor;

-- The asks of every host: the seed's approval record, as the host created
-- it, with the host (its login role) and what the fleet made of it.
CREATE TABLE toolgate.approvals (
    id             text PRIMARY KEY,
    host           text NOT NULL DEFAULT session_user,
    session_id     text NOT NULL,
    tool_use_id    text NOT NULL,
    tool_name      text NOT NULL,
    input          json NOT NULL, -- exactly as the host recorded it (json keeps the text; jsonb would not)
    matched_rule   text,
    policy_version integer NOT NULL,
    status         text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
    created_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL,
    -- What the host applied (its ledger's status), once it has reported it.
    outcome        text CHECK (outcome IN ('approved', 'denied', 'expired')),
    settled_at     timestamptz
);
CREATE INDEX approvals_pending ON toolgate.approvals (expires_at) WHERE status = 'pending';
CREATE INDEX approvals_unapplied ON toolgate.approvals (host) WHERE outcome IS NULL AND status IN ('approved', 'denied');

-- A decision is its own row, one per approval (the primary key), written
-- only by toolgate.decide().
CREATE TABLE toolgate.decisions (
    approval_id text PRIMARY KEY REFERENCES toolgate.approvals (id),
    host        text NOT NULL,
    decision    text NOT NULL CHECK (decision IN ('allow', 'deny')),
    actor       text NOT NULL,
    client_addr inet,
    note        text,
    decided_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX decisions_recent ON toolgate.decisions (decided_at DESC);

-- Every host's audit chain, event by event, exactly as its ledger stores
-- it (doc), idempotent by (host, seq).
CREATE TABLE toolgate.events (
    host         text NOT NULL DEFAULT session_user,
    seq          bigint NOT NULL,
    time         timestamptz NOT NULL,
    kind         text NOT NULL,
    subject      text NOT NULL,
    hash         text NOT NULL,
    doc          json NOT NULL,
    published_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (host, seq)
);

ALTER TABLE toolgate.approvals ENABLE ROW LEVEL SECURITY;
ALTER TABLE toolgate.decisions ENABLE ROW LEVEL SECURITY;
ALTER TABLE toolgate.events ENABLE ROW LEVEL SECURITY;

-- A host writes and reads only its own rows, under its own login role.
CREATE POLICY agent_insert ON toolgate.approvals FOR INSERT TO toolgate_agent
    WITH CHECK (host = session_user AND status = 'pending' AND outcome IS NULL AND settled_at IS NULL);
CREATE POLICY agent_read ON toolgate.approvals FOR SELECT TO toolgate_agent USING (host = session_user);
CREATE POLICY agent_read ON toolgate.decisions FOR SELECT TO toolgate_agent USING (host = session_user);
CREATE POLICY agent_insert ON toolgate.events FOR INSERT TO toolgate_agent WITH CHECK (host = session_user);
CREATE POLICY agent_read ON toolgate.events FOR SELECT TO toolgate_agent USING (host = session_user);
-- People read everything.
CREATE POLICY people_read ON toolgate.approvals FOR SELECT TO toolgate_approver, toolgate_auditor USING (true);
CREATE POLICY people_read ON toolgate.decisions FOR SELECT TO toolgate_approver, toolgate_auditor USING (true);
CREATE POLICY people_read ON toolgate.events FOR SELECT TO toolgate_approver, toolgate_auditor USING (true);

-- No UPDATE and no DELETE for anyone: status moves only inside the
-- functions below, which run as the schema's owner.
GRANT SELECT, INSERT ON toolgate.approvals, toolgate.events TO toolgate_agent;
GRANT SELECT ON toolgate.decisions TO toolgate_agent;
GRANT SELECT ON toolgate.approvals, toolgate.decisions, toolgate.events TO toolgate_approver, toolgate_auditor;

-- A new ask wakes every page and CLI that watches the queue.
CREATE FUNCTION toolgate.queue_changed() RETURNS trigger
LANGUAGE plpgsql SET search_path = toolgate, pg_temp AS $$
BEGIN
    PERFORM pg_notify('toolgate_queue', NEW.id);
    RETURN NULL;
END $$;
CREATE TRIGGER approvals_queue AFTER INSERT ON toolgate.approvals FOR EACH ROW EXECUTE FUNCTION toolgate.queue_changed();

-- decide is the arbiter: one conditional UPDATE decides, the decision is
-- its own row, and the host that asked is told (LISTEN toolgate_decision).
-- SQLSTATEs: TG404 no such approval, TG409 already decided, TG410 expired.
CREATE FUNCTION toolgate.decide(p_id text, p_allow boolean, p_note text DEFAULT NULL)
RETURNS toolgate.decisions
LANGUAGE plpgsql SECURITY DEFINER SET search_path = toolgate, pg_temp AS $$
DECLARE
    a toolgate.approvals;
    d toolgate.decisions;
BEGIN
    IF NOT pg_has_role(session_user, 'toolgate_approver', 'MEMBER') THEN
        RAISE EXCEPTION 'role % is not an approver', session_user USING ERRCODE = '42501';
    END IF;
    UPDATE toolgate.approvals SET status = CASE WHEN p_allow THEN 'approved' ELSE 'denied' END
     WHERE id = p_id AND status = 'pending' AND expires_at > now()
    RETURNING * INTO a;
    IF NOT FOUND THEN
        SELECT * INTO a FROM toolgate.approvals WHERE id = p_id;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'no approval %', p_id USING ERRCODE = 'TG404';
        ELSIF a.status IN ('pending', 'expired') THEN
            RAISE EXCEPTION 'approval % expired at %', p_id, a.expires_at USING ERRCODE = 'TG410';
        ELSE
            RAISE EXCEPTION 'approval % was already %', p_id, a.status USING ERRCODE = 'TG409';
        END IF;
    END IF;
    INSERT INTO toolgate.decisions (approval_id, host, decision, actor, client_addr, note)
    VALUES (a.id, a.host, CASE WHEN p_allow THEN 'allow' ELSE 'deny' END,
            session_user || '@' || coalesce(host(inet_client_addr()), 'local'), inet_client_addr(), p_note)
    RETURNING * INTO d;
    PERFORM pg_notify('toolgate_decision', a.host || ' ' || a.id);
    PERFORM pg_notify('toolgate_queue', a.id);
    RETURN d;
END $$;

-- expire is a host asking, at its own expires_at, whether a person decided
-- in time: a pending ask of its own becomes expired (a deny, which a host
-- may always give itself); a decided one answers with its decision.
CREATE FUNCTION toolgate.expire(p_id text)
RETURNS TABLE (status text, decision text, actor text, note text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = toolgate, pg_temp AS $$
BEGIN
    UPDATE toolgate.approvals a SET status = 'expired'
     WHERE a.id = p_id AND a.host = session_user AND a.status = 'pending';
    IF FOUND THEN
        PERFORM pg_notify('toolgate_queue', p_id);
    END IF;
    RETURN QUERY SELECT a.status, d.decision, d.actor, d.note
      FROM toolgate.approvals a LEFT JOIN toolgate.decisions d ON d.approval_id = a.id
     WHERE a.id = p_id AND a.host = session_user;
END $$;

-- settle records what a host applied to one of its asks (its ledger's
-- status); a pending ask that the host expired becomes expired.
CREATE FUNCTION toolgate.settle(p_id text, p_outcome text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = toolgate, pg_temp AS $$
BEGIN
    IF p_outcome NOT IN ('approved', 'denied', 'expired') THEN
        RAISE EXCEPTION 'outcome must be approved, denied or expired' USING ERRCODE = '22023';
    END IF;
    UPDATE toolgate.approvals a
       SET status = CASE WHEN a.status = 'pending' AND p_outcome = 'expired' THEN 'expired' ELSE a.status END,
           outcome = p_outcome, settled_at = now()
     WHERE a.id = p_id AND a.host = session_user;
    PERFORM pg_notify('toolgate_queue', p_id);
END $$;

-- Functions are executable by PUBLIC unless revoked: only the roles named
-- here may call them.
REVOKE ALL ON FUNCTION toolgate.decide(text, boolean, text), toolgate.expire(text), toolgate.settle(text, text),
    toolgate.queue_changed() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION toolgate.decide(text, boolean, text) TO toolgate_approver;
GRANT EXECUTE ON FUNCTION toolgate.expire(text), toolgate.settle(text, text) TO toolgate_agent;
