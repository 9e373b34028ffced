import winston from 'winston';
import { createLogger } from '../../src/logging/logger';

describe('disabled log levels', () => {
  it('a line below the level is dropped before winston formats it, for children too', () => {
    const logger = createLogger('warn', 'json');
    const write = jest.spyOn(logger, 'write').mockImplementation(() => true);
    logger.debug('not wanted', { podSandboxId: 'p' });
    logger.info('not wanted either');
    const child = logger.child({ containerId: 'c' });
    child.debug('nor this');
    expect(write).not.toHaveBeenCalled();
    child.warn('wanted', { x: 1 });
    logger.error('wanted too');
    expect(write).toHaveBeenCalledTimes(2);
    expect(write.mock.calls[0][0]).toMatchObject({ level: 'warn', message: 'wanted', containerId: 'c', x: 1 });
  });

  it('a level turned on later is written', () => {
    const logger = createLogger('info', 'json');
    const write = jest.spyOn(logger, 'write').mockImplementation(() => true);
    logger.debug('off');
    logger.level = 'debug';
    logger.debug('on');
    expect(write).toHaveBeenCalledTimes(1);
  });

  it('answers isLevelEnabled from the configured level, asking winston once per level and value', () => {
    const winstons = jest.spyOn(winston.Logger.prototype, 'isLevelEnabled');
    try {
      const logger = createLogger('info', 'json');
      const child = logger.child({ podSandboxId: 'p' });
      expect([logger.isLevelEnabled('debug'), child.isLevelEnabled('debug'), logger.isLevelEnabled('debug')]).toEqual([
        false,
        false,
        false,
      ]);
      expect(logger.isLevelEnabled('warn')).toBe(true);
      expect(winstons).toHaveBeenCalledTimes(2);
      logger.level = 'debug';
      expect([logger.isLevelEnabled('debug'), child.isLevelEnabled('debug')]).toEqual([true, true]);
      logger.level = 'error';
      expect(child.isLevelEnabled('warn')).toBe(false);
      logger.level = 'debug';
      expect(logger.isLevelEnabled('debug')).toBe(true);
      expect(winstons).toHaveBeenCalledTimes(4);
    } finally {
      winstons.mockRestore();
    }
  });
});
