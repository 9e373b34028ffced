import type * as Docker from '../../src/docker/types';
import { DomainError } from '../../src/errors';
import { createImageNames, statusImage } from '../../src/images/image-names';

const ID = 'sha256:' + 'ab'.repeat(32);

function inspector(answer: () => Partial<Docker.ImageInspectInfo>) {
  const calls: string[] = [];
  return {
    calls,
    inspectImage: async (ref: string): Promise<Docker.ImageInspectInfo> => {
      calls.push(ref);
      return { Id: ID, RepoTags: [], RepoDigests: [], Size: 1, Created: '', ...answer() };
    },
  };
}

describe('the image a container status names', () => {
  const naming = {
    tags: ['registry.local/app:1', 'app:latest'],
    digests: ['registry.local/app@sha256:' + 'cd'.repeat(32)],
  };

  it('created from an id (a kubelet before 1.31): the first tag, and the first repo digest as reference', () => {
    expect(statusImage({ configImage: ID, imageId: ID }, naming)).toEqual({
      image: 'registry.local/app:1',
      imageRef: naming.digests[0],
    });
  });

  it('the image the user specified comes first, then the name it was created from', () => {
    expect(statusImage({ configImage: ID, imageId: ID, userImage: 'app' }, naming).image).toBe('app');
    expect(statusImage({ configImage: 'app:latest', imageId: ID }, naming).image).toBe('app:latest');
  });

  it('an image without names (built here, not pulled) keeps its id on both fields', () => {
    expect(statusImage({ configImage: ID, imageId: ID }, { tags: [], digests: [] })).toEqual({
      image: ID,
      imageRef: ID,
    });
    expect(statusImage({ configImage: ID, imageId: ID }, undefined)).toEqual({ image: ID, imageRef: ID });
  });
});

describe('image names by id', () => {
  it('inspects an image once per TTL, and again once it has passed', async () => {
    let t = 0;
    const docker = inspector(() => ({
      RepoTags: ['a:1', '<none>:<none>'],
      RepoDigests: ['<none>@<none>', 'a@sha256:x'],
    }));
    const names = createImageNames(docker, 1000, () => t);
    const [one, two] = await Promise.all([names.of(ID), names.of(ID)]);
    expect(one).toEqual({ tags: ['a:1'], digests: ['a@sha256:x'] });
    expect(two).toBe(one);
    expect(docker.calls).toHaveLength(1);
    t = 999;
    await names.of(ID);
    expect(docker.calls).toHaveLength(1);
    t = 1000;
    await names.of(ID);
    expect(docker.calls).toHaveLength(2);
  });

  it('an image Docker no longer has has no names; other failures are not kept', async () => {
    let fail: Error | undefined = new DomainError('not-found', 'no such image');
    const docker = {
      calls: 0,
      inspectImage: async (): Promise<Docker.ImageInspectInfo> => {
        docker.calls++;
        if (fail) throw fail;
        return { Id: ID, RepoTags: ['b:2'], RepoDigests: [], Size: 1, Created: '' };
      },
    };
    const names = createImageNames(docker, 1000, () => 0);
    await expect(names.of(ID)).resolves.toBeUndefined();
    const other = 'sha256:' + 'ef'.repeat(32);
    fail = new DomainError('unavailable', 'docker is down');
    await expect(names.of(other)).rejects.toThrow('docker is down');
    fail = undefined;
    await expect(names.of(other)).resolves.toEqual({ tags: ['b:2'], digests: [] });
    expect(docker.calls).toBe(3);
  });
});
