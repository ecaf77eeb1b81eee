import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { agentDir, encodeCwd, expandHome, parseSessionFileName, sessionDirForCwd } from '../src/core/sessionPaths';

describe('sessionPaths', () => {
  it('encodes a cwd the way Pi names its session folders', () => {
    assert.equal(encodeCwd('/home/u/my-proj'), '--home-u-my-proj--');
    assert.equal(encodeCwd('C:\\work\\x'), '--C--work-x--');
    assert.equal(encodeCwd('\\\\server\\share'), '---server-share--');
    assert.equal(encodeCwd('/'), '----');
  });

  it('uses ~/.pi/agent unless PI_CODING_AGENT_DIR is set (with ~ expanded)', () => {
    assert.equal(agentDir({}, '/home/u'), path.join('/home/u', '.pi', 'agent'));
    assert.equal(agentDir({ PI_CODING_AGENT_DIR: '/opt/pi' }, '/home/u'), '/opt/pi');
    assert.equal(agentDir({ PI_CODING_AGENT_DIR: '~/alt' }, '/home/u'), path.join('/home/u', 'alt'));
    assert.equal(agentDir({ PI_CODING_AGENT_DIR: '  ' }, '/home/u'), path.join('/home/u', '.pi', 'agent'));
    assert.equal(expandHome('~', '/h'), '/h');
    assert.equal(expandHome('/abs/~x', '/h'), '/abs/~x');
  });

  it('puts it together', () => {
    assert.equal(sessionDirForCwd('/w/p', {}, '/home/u'), path.join('/home/u', '.pi', 'agent', 'sessions', '--w-p--'));
  });

  it('reads Pi session file names', () => {
    assert.deepEqual(parseSessionFileName('/x/2025-01-02T03-04-05-678Z_abc-123.jsonl'), {
      timestamp: '2025-01-02T03-04-05-678Z',
      sessionId: 'abc-123',
    });
    assert.equal(parseSessionFileName('notes.jsonl'), undefined);
  });
});
